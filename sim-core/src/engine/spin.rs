//! What spins at one instant. Once an instant's events pass the same-instant base, the
//! loop counts them by event kind (off the hot path: most instants never get there), so a
//! run stopped by the same-instant guard names the component whose events filled the
//! instant, not merely the one whose event happened to be last.

use super::Event;

/// Events of the current instant past the base, by kind (a handful of kinds at most).
pub(super) struct SpinTally<E> {
    /// `(kind id, events, the latest event of that kind)`.
    kinds: Vec<(u16, u64, E)>,
    counted: u64,
}

impl<E: Event> SpinTally<E> {
    pub(super) fn new() -> Self {
        SpinTally { kinds: Vec::new(), counted: 0 }
    }

    /// Forgets the previous instant.
    pub(super) fn clear(&mut self) {
        self.kinds.clear();
        self.counted = 0;
    }

    /// Counts one event of the instant.
    pub(super) fn count(&mut self, event: &E) {
        self.counted += 1;
        let kind = event.kind_id();
        match self.kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => {
                k.1 += 1;
                k.2 = *event;
            }
            None => self.kinds.push((kind, 1, *event)),
        }
    }

    /// The kind with the most events (the first seen among equals): its latest event and
    /// its count, and the number of events counted in all.
    pub(super) fn busiest(&self) -> Option<(&E, u64, u64)> {
        let mut best: Option<&(u16, u64, E)> = None;
        for k in &self.kinds {
            if best.is_none_or(|b| k.1 > b.1) {
                best = Some(k);
            }
        }
        best.map(|b| (&b.2, b.1, self.counted))
    }
}
