//! The world's side of a scripted upstream (`crate::scripted`): the answer of a service
//! that starts at a scripted station, or for a scripted row's own attempt.

use super::*;

impl QueueingWorld {
    /// A service of `job` starts at station `st`: its scripted duration and answer, or
    /// `None` (no script, or the script is used up: the station's normal service).
    #[inline]
    pub(super) fn scripted_start(
        &mut self,
        st: u16,
        job: &Job,
    ) -> Option<crate::scripted::Scripted> {
        if self.upstreams.stations[st as usize].script.is_none()
            && !self.traffic.sources[job.source as usize].traffic.has_script()
        {
            return None; // neither the station nor the source is scripted
        }
        self.scripted_answer(st, job)
    }

    #[inline(never)]
    fn scripted_answer(&mut self, st: u16, job: &Job) -> Option<crate::scripted::Scripted> {
        // A scripted row's own answer for this attempt (first call site, not a backup).
        // (The job id's backup bit is 47, its fallback hops bits 56 and up: `Call::job_id`.)
        let first_site = (job.id >> 47) & 1 == 0 && job.id >> 56 == 0;
        let own = first_site
            .then(|| {
                self.traffic.sources[job.source as usize].traffic.row_answer(job.seq, job.attempt)
            })
            .flatten();
        if own.is_none() {
            self.upstreams.stations[st as usize].script.as_ref()?;
        }
        // The waiting client's timeout (`Some(ZERO)`: none; `None`: nobody waits any more).
        let timeout = self
            .calls
            .slots
            .get(job.slot)
            .filter(|c| c.awaits(job.id))
            .map(|_| self.call_timeout(job.slot));
        if let Some(a) = own {
            return Some(a.scripted(timeout));
        }
        self.upstreams.stations[st as usize].script.as_mut().expect("checked above").next(timeout)
    }
}
