//! The scripted harness: a client that sends listed calls and an upstream that gives listed
//! answers, so any governor can be driven call by call from a scenario file (a unit test
//! through the whole world, or the replay of a recorded run: its arrival instants and
//! service times, to compare the model with the real system — the guide is
//! `docs/replay-your-system.md`).
//!
//! A scripted source — `script: Script([Call(at: "1.5s", class: "P0", key: 42, user: 7),
//! ...])` in place of `interarrival` / `trace` / `closed_loop` — sends one request per row
//! at `start + at`, with the row's class, user and cache key (nothing is drawn for them).
//! A scripted station — `script: Some([Answer(duration: "200ms", outcome: Success), ...])`
//! — gives the n-th service it starts the n-th answer: that service time and that outcome.
//!
//! Key design decisions:
//! - Answers are consumed in the order services START at the station (the only order the
//!   station itself sees; queueing and retries are the world's business). Every start
//!   counts, also the start of work whose client already gave up while it waited.
//! - After the list ends the station serves normally (its `service`, `error_rate`, …), so a
//!   script can pin down an incident's opening calls and let the model run on.
//! - `Hang` never answers within the call site's timeout: its service lasts
//!   `max(duration, timeout + 1 ns)` (without a timeout: [`HANG_FOREVER`]), so the
//!   client's timeout always fires first; `duration` is the work the provider does anyway
//!   (what keeps a server busy when the station does not cancel abandoned work).
//! - `TooMany` answers 429 (`Rejected(Upstream429)`) with its Retry-After, which reaches
//!   the governors as `CallInfo::retry_after`, like a provider quota's 429.
//! - A row may carry its own answers — `Call(at: "1s", answers: [Answer(...), ...])` — the
//!   n-th for its call's attempt n (0-based: the first attempt, then each retry), whatever
//!   order services start in at the station, so one different decision elsewhere shifts
//!   no other row's answers. They take precedence over the station's script, which answers
//!   the other starts (and does not count these). Attempts past the row's list, a
//!   failover's backup call and a call moved on along a fallback chain are answered by the
//!   station as without row answers.
//!
//! Architecture invariant: a scripted run draws no random number for what the script
//! states; a scenario without scripts runs exactly as before (the hooks are inert: no
//! draw, no event, no state).
//!
//! API boundary: this module only parses, validates and hands out rows; the world
//! (`world/traffic.rs`, `world/calls.rs`) applies them at arrival and at service start.

use serde::{Deserialize, Deserializer, Serialize, de::Error};
use sim_core::SimDuration;
use std::sync::Arc;

/// Most rows a client script may have (memory: ~60 bytes a row).
pub const MAX_CALLS: usize = 1_000_000;
/// Most answers an upstream script may have.
pub const MAX_ANSWERS: usize = 1_000_000;
/// Service time of a `Hang` at a call site without a timeout: about 41.7 days, beyond any
/// run (the call stays in flight).
pub const HANG_FOREVER: SimDuration = SimDuration(3_600_000_000_000_000);

/// One scripted request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Call")]
pub struct ScriptCall {
    /// When it arrives, from the source's `start`.
    pub at: SimDuration,
    /// Its class (default: the source's class).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub class: Option<String>,
    /// Its cache / routing key (0: none).
    #[serde(default)]
    pub key: u64,
    /// Its user (0: none).
    #[serde(default)]
    pub user: u64,
    /// Prompt tokens (default: the source's `prompt_tokens` distribution, else unknown).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens: Option<u32>,
    /// Output tokens (default: the source's `output_tokens` distribution, else unknown).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_tokens: Option<u32>,
    /// This call's own answers, by attempt (at most [`MAX_ROW_ANSWERS`]); empty: the
    /// station answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Answer>,
}

/// Most answers one scripted call may carry.
pub const MAX_ROW_ANSWERS: usize = 256;

/// A client script: rows in time order (validated while parsing: 1 to [`MAX_CALLS`] rows,
/// `at` never decreasing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename = "Script")]
pub struct Script(pub Vec<ScriptCall>);

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename = "Script")]
        struct Raw(Vec<ScriptCall>);
        let Raw(rows) = Raw::deserialize(d)?;
        check_calls(&rows).map_err(D::Error::custom)?;
        Ok(Script(rows))
    }
}

/// Row count and time order of a client script (the message names the row).
pub fn check_calls(rows: &[ScriptCall]) -> Result<(), String> {
    if rows.is_empty() {
        return Err("a script needs at least one `Call(at: ...)`".into());
    }
    if rows.len() > MAX_CALLS {
        return Err(format!("a script has at most {MAX_CALLS} calls, found {}", rows.len()));
    }
    if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.answers.len() > MAX_ROW_ANSWERS) {
        return Err(format!(
            "[{i}].answers: a call carries at most {MAX_ROW_ANSWERS} answers, found {}",
            r.answers.len()
        ));
    }
    for (i, w) in rows.windows(2).enumerate() {
        if w[1].at < w[0].at {
            return Err(format!(
                "[{}].at: call times must not decrease ({} after {})",
                i + 1,
                w[1].at,
                w[0].at
            ));
        }
    }
    Ok(())
}

impl Script {
    /// Every row's class is a declared class; `Err((field path, message))`.
    pub fn check_classes(
        &self,
        classes: &[crate::class::ClassSpec],
    ) -> Result<(), (String, String)> {
        for (i, r) in self.0.iter().enumerate() {
            if let Some(c) = &r.class
                && !classes.iter().any(|k| &k.name == c)
            {
                let names: Vec<&str> = classes.iter().map(|k| k.name.as_str()).collect();
                return Err((
                    format!("[{i}].class"),
                    format!("no class named `{c}`; the scenario's classes: {}", names.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The rows as trace data (arrival offsets from the source's `start`, tokens), so the
    /// world replays them like a trace.
    pub fn as_trace(&self) -> crate::trace::TraceSpec {
        let data = crate::trace::TraceData {
            arrival_ns: self.0.iter().map(|r| r.at.0).collect(),
            prompt_tokens: self.0.iter().map(|r| r.prompt_tokens).collect(),
            output_tokens: self.0.iter().map(|r| r.output_tokens).collect(),
            ..Default::default()
        };
        crate::trace::TraceSpec {
            file: "<script>".into(),
            columns: Default::default(),
            time_unit: SimDuration::from_secs(1),
            rate_scale: 1.0,
            partial: true,
            data: Some(Arc::new(data)),
        }
    }

    /// The first row's time (the source's first arrival is at `start` + this).
    pub fn first_at(&self) -> SimDuration {
        self.0[0].at
    }

    /// Class index, user and key of every row, resolved once (`default_class` for rows
    /// without a class).
    pub fn resolve(&self, classes: &[crate::class::ClassSpec], default_class: u16) -> ScriptRows {
        let rows = self.0.iter().map(|r| {
            let class = r.class.as_ref().map_or(default_class, |c| {
                classes.iter().position(|k| &k.name == c).expect("checked") as u16
            });
            (class, r.user, r.key)
        });
        let answers = self.0.iter().enumerate().filter(|(_, r)| !r.answers.is_empty());
        let answers = answers.map(|(i, r)| (i as u64, r.answers.clone())).collect();
        ScriptRows { rows: rows.collect(), answers }
    }
}

/// Resolved `(class, user, key)` of each row, by sequence number, and the rows' own
/// answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptRows {
    rows: Vec<(u16, u64, u64)>,
    answers: std::collections::BTreeMap<u64, Vec<Answer>>,
}

impl ScriptRows {
    /// Row `seq`'s class, user and key.
    pub fn row(&self, seq: u64) -> (u16, u64, u64) {
        self.rows[seq as usize]
    }

    /// Row `seq`'s own answer for its call's attempt `attempt`, if it has one.
    pub fn answer(&self, seq: u64, attempt: u32) -> Option<Answer> {
        self.answers.get(&seq)?.get(attempt as usize).copied()
    }
}

/// What a scripted upstream answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum AnswerOutcome {
    /// A normal answer.
    Success,
    /// HTTP 5xx (`Failed(Upstream5xx)`).
    Error5xx,
    /// HTTP 429 with an optional Retry-After (`Rejected(Upstream429)`).
    TooMany {
        #[serde(default)]
        retry_after: Option<SimDuration>,
    },
    /// No answer before the call site's timeout fires (`Failed(Timeout)` at the client).
    Hang,
    /// A business error (`Failed(BusinessError)`): not the upstream's fault.
    BusinessError,
}

/// One scripted answer: the service time and the outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Answer")]
pub struct Answer {
    /// The service time (`Hang`: the work done, at least until the client's timeout).
    pub duration: SimDuration,
    pub outcome: AnswerOutcome,
}

/// An upstream script (1 to [`MAX_ANSWERS`] answers), for `StationSpec::script` with
/// `deserialize_with`.
pub fn answers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Answer>>, D::Error> {
    let v = Option::<Vec<Answer>>::deserialize(d)?;
    if let Some(v) = &v
        && (v.is_empty() || v.len() > MAX_ANSWERS)
    {
        return Err(D::Error::custom(format!(
            "expected 1 to {MAX_ANSWERS} answers, found {}",
            v.len()
        )));
    }
    Ok(v)
}

/// A station's script at run time: the answers and how many services have started.
#[derive(Clone, Debug)]
pub struct UpstreamScript {
    answers: Arc<[Answer]>,
    started: u64,
}

/// The scripted part of one service: its duration and its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scripted {
    pub service: SimDuration,
    /// `None`: success; else the failure (`Upstream5xx`, `Upstream429`, `BusinessError`).
    /// A `Hang` answers nothing: its client's timeout ends the call first.
    pub error: Option<crate::Reason>,
    pub retry_after: Option<SimDuration>,
}

impl UpstreamScript {
    pub fn new(answers: &[Answer]) -> Self {
        assert!(!answers.is_empty() && answers.len() <= MAX_ANSWERS, "validated");
        UpstreamScript { answers: answers.into(), started: 0 }
    }

    /// Services started so far (scripted or not).
    pub fn started(&self) -> u64 {
        self.started
    }

    /// A service starts: its answer, or `None` once the script is used up (the station's
    /// normal service). `timeout` is the waiting client's call-site timeout (`Some(ZERO)`:
    /// none; `None`: nobody waits any more, a `Hang` lasts its `duration`).
    pub fn next(&mut self, timeout: Option<SimDuration>) -> Option<Scripted> {
        let a = self.answers.get(self.started as usize).copied();
        self.started += 1;
        Some(a?.scripted(timeout))
    }
}

impl Answer {
    /// What this answer does to a service that starts now; `timeout` as in
    /// [`UpstreamScript::next`].
    pub fn scripted(self, timeout: Option<SimDuration>) -> Scripted {
        let a = self;
        use crate::Reason::*;
        let (error, retry_after) = match a.outcome {
            AnswerOutcome::Success | AnswerOutcome::Hang => (None, None),
            AnswerOutcome::Error5xx => (Some(Upstream5xx), None),
            AnswerOutcome::TooMany { retry_after } => (Some(Upstream429), retry_after),
            AnswerOutcome::BusinessError => (Some(BusinessError), None),
        };
        let service = match a.outcome {
            AnswerOutcome::Hang => match timeout {
                Some(SimDuration::ZERO) => HANG_FOREVER,
                Some(t) => a.duration.max(t + SimDuration(1)),
                None => a.duration,
            },
            _ => a.duration,
        };
        Scripted { service, error, retry_after }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_script_parses_and_rejects_bad_rows() {
        let s: Script = ron::from_str(
            r#"Script([Call(at: "1.5s", class: "P0", key: 42, user: 7), Call(at: "1.5s")])"#,
        )
        .unwrap();
        assert_eq!(s.0.len(), 2);
        assert_eq!((s.0[0].at, s.0[0].key, s.0[0].user), (SimDuration(1_500_000_000), 42, 7));
        assert_eq!((s.0[1].class.as_deref(), s.0[1].key, s.0[1].user), (None, 0, 0));
        // Written back the way it is read (run ids hash the scenario's text).
        assert_eq!(ron::from_str::<Script>(&ron::to_string(&s).unwrap()).unwrap(), s);
        let err = |t: &str| ron::from_str::<Script>(t).unwrap_err().to_string();
        let e = err(r#"Script([Call(at: "2s"), Call(at: "3s"), Call(at: "1s")])"#);
        assert!(e.contains("[2].at: call times must not decrease (1s after 3s)"), "{e}");
        assert!(err("Script([])").contains("at least one"));
        assert!(err(r#"Script([Call(at: "1s", klass: "P0")])"#).contains("klass"));
    }

    #[test]
    fn upstream_script_hands_out_answers_in_start_order() {
        let a: Option<Vec<Answer>> = ron::from_str(
            r#"Some([Answer(duration: "200ms", outcome: Success),
                Answer(duration: "1s", outcome: Error5xx),
                Answer(duration: "0s", outcome: TooMany(retry_after: Some("2s"))),
                Answer(duration: "3s", outcome: Hang),
                Answer(duration: "1s", outcome: Hang),
                Answer(duration: "5ms", outcome: BusinessError)])"#,
        )
        .unwrap();
        let a = a.unwrap();
        let text = ron::to_string(&Some(a.clone())).unwrap();
        assert_eq!(ron::from_str::<Option<Vec<Answer>>>(&text).unwrap(), Some(a.clone()));
        let mut s = UpstreamScript::new(&a);
        let t = Some(SimDuration::from_secs(2));
        let ms = |n: u64| SimDuration(n * 1_000_000);
        use crate::Reason::*;
        let sc = |service, error, retry_after| Some(Scripted { service, error, retry_after });
        assert_eq!(s.next(t), sc(ms(200), None, None));
        assert_eq!(s.next(t), sc(ms(1000), Some(Upstream5xx), None));
        assert_eq!(s.next(t), sc(ms(0), Some(Upstream429), Some(ms(2000))));
        // Hang: max(3 s, 2 s + 1 ns) = 3 s; max(1 s, 2 s + 1 ns) = 2 s + 1 ns.
        assert_eq!(s.next(t), sc(ms(3000), None, None));
        assert_eq!(s.next(t), sc(SimDuration(2_000_000_001), None, None));
        assert_eq!(s.next(None), sc(ms(5), Some(BusinessError), None));
        // Used up: the station's normal service, but starts are still counted.
        assert_eq!(s.next(t), None);
        assert_eq!(s.started(), 7);
        let mut h =
            UpstreamScript::new(&[Answer { duration: ms(1), outcome: AnswerOutcome::Hang }]);
        assert_eq!(h.next(Some(SimDuration::ZERO)).unwrap().service, HANG_FOREVER);
        // Abandoned work (nobody waits): the work it does, 1 ms.
        let mut h =
            UpstreamScript::new(&[Answer { duration: ms(1), outcome: AnswerOutcome::Hang }]);
        assert_eq!(h.next(None).unwrap().service, ms(1));
    }
}
