//! The world's side of a scripted upstream (`crate::scripted`): the answer of a service
//! that starts at a scripted station.

use super::*;

impl QueueingWorld {
    /// A service of `job` starts at station `st`: its scripted duration and answer, or
    /// `None` (no script, or the script is used up: the station's normal service).
    pub(super) fn scripted_start(
        &mut self,
        st: u16,
        job: &Job,
    ) -> Option<crate::scripted::Scripted> {
        self.upstreams.stations[st as usize].script.as_ref()?;
        // The waiting client's timeout (`Some(ZERO)`: none; `None`: nobody waits any more).
        let timeout = self.calls.slots[job.slot as usize]
            .as_ref()
            .filter(|c| c.awaits(job.id))
            .map(|_| self.call_timeout(job.slot));
        self.upstreams.stations[st as usize].script.as_mut().expect("checked above").next(timeout)
    }
}
