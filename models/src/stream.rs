//! Streaming responses (SSE) of a station: when each chunk arrives, whether the stream
//! stalls, and when a client with a read timeout between chunks gives up on it.
//!
//! The model (docs/domain.md §3.8): a streaming station's answer starts with a first chunk (the
//! first token) once the *prompt part* of the service time is over — everything but the
//! output tokens' share, `service − output_tokens × per_output_token` (both scaled by the
//! latency multiplier). Then the output tokens follow, `per_output_token` each, delivered
//! in chunks of `chunk_tokens`; the last chunk arrives exactly when the service ends, so a
//! stream that does not stall ends when a plain answer would. A stalled stream (a keyed
//! coin with probability `stall_rate`) pauses once, for a `stall_duration`, before chunk
//! `s = 1 + ⌊stall_after × (C − 1)⌋` of its `C` chunks after the first; everything from
//! there on (the service end included) moves later by the stall, and the station's server
//! stays busy through it.
//!
//! Key design decision: no event per chunk. A stream's chunk times are a closed form fixed
//! when its service starts ([`StreamTiming::at`]); the gaps between chunks take only three
//! values — the regular gap `chunk_tokens × per_output_token`, the last (shorter) one, and
//! the stall's — so the first gap longer than a read timeout, hence the instant the client
//! closes the stream, is found in O(1) ([`StreamTiming::close_at`]). A call costs one
//! timer whatever its length.
//!
//! The read timeout runs between chunks, from the first chunk on; the wait for the first
//! chunk (provider queueing and the prompt part) is bounded by the call site's total
//! `timeout`. A client closes a stream at (last chunk received + read timeout).
//!
//! Architecture invariant: every offset is integer nanoseconds from the service start;
//! chunk times are non-decreasing in the chunk index, the last one is `service + stall`;
//! `close_at(r)`, when some gap exceeds `r`, is strictly before the end. Stream settings
//! never draw a random number themselves: the world hands in the stall (keyed draws
//! `STREAM_STALL`, `STREAM_STALL_LENGTH`).
//!
//! API boundary: [`StreamSettings`] (a station's run-time stream settings, set through the
//! station's parameter rows) and [`StreamTiming`] (pure arithmetic);
//! the world (`world/streaming.rs`) plans streams, arms the close timer and records metrics.

use sim_core::{Dist, SimDuration};

/// The run-time streaming settings of a station (from `StationSpec`).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSettings {
    /// Answers are streams (TTFT and chunk gaps measured, stalls and read timeouts apply).
    pub streaming: bool,
    /// Output tokens per chunk (≥ 1).
    pub chunk_tokens: u64,
    /// Probability that a response's stream stalls once.
    pub stall_rate: f64,
    /// How long a stall lasts.
    pub stall_duration: Dist<SimDuration>,
    /// Where in the stream the stall comes, as a fraction of its chunks (0: right after
    /// the first chunk, 1: before the last).
    pub stall_after: f64,
}

/// Upper bound on `chunk_tokens`.
pub const MAX_CHUNK_TOKENS: u64 = 1 << 20;

/// One pause of a stream: `extra` before chunk `before` (1-based among the chunks after
/// the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    pub before: u64,
    pub extra: SimDuration,
}

/// The chunk times of one response, as offsets from its service start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamTiming {
    /// The first chunk (time to first token, from the service start).
    pub first: SimDuration,
    /// The unstalled end of the stream (the service time).
    pub service: SimDuration,
    pub per_token: SimDuration,
    pub tokens: u64,
    pub chunk_tokens: u64,
    pub stall: Option<Stall>,
}

impl StreamTiming {
    /// A stream of `tokens` output tokens at `per_token` each, ending at `service`.
    pub fn new(
        service: SimDuration,
        per_token: SimDuration,
        tokens: u64,
        chunk_tokens: u64,
    ) -> Self {
        assert!(chunk_tokens >= 1, "chunks carry at least one token");
        let output = per_token.0.saturating_mul(tokens);
        let first = SimDuration(service.0.saturating_sub(output));
        StreamTiming { first, service, per_token, tokens, chunk_tokens, stall: None }
    }

    /// Chunks after the first: ⌈tokens ÷ chunk_tokens⌉, at least one (the end of stream).
    pub fn chunks(&self) -> u64 {
        self.tokens.div_ceil(self.chunk_tokens).max(1)
    }

    /// The chunk a stall at fraction `after` of the stream comes before.
    pub fn stall_position(&self, after: f64) -> u64 {
        assert!((0.0..=1.0).contains(&after));
        let c = self.chunks();
        1 + (((c - 1) as f64 * after) as u64).min(c - 1)
    }

    /// Stalls the stream once, before chunk `before`, for `extra`.
    pub fn with_stall(self, before: u64, extra: SimDuration) -> Self {
        assert!((1..=self.chunks()).contains(&before), "a stall comes before a chunk");
        StreamTiming { stall: Some(Stall { before, extra }), ..self }
    }

    /// Offset of chunk `j` (0 = the first chunk, `chunks()` = the last).
    pub fn at(&self, j: u64) -> SimDuration {
        let c = self.chunks();
        assert!(j <= c, "chunk {j} of {c}");
        let base = if j == c {
            self.service.0
        } else {
            let done = (j as u128 * self.chunk_tokens as u128).min(self.tokens as u128);
            let t = self.first.0 as u128 + done * self.per_token.0 as u128;
            t.min(self.service.0 as u128) as u64
        };
        let extra = match self.stall {
            Some(s) if j >= s.before => s.extra.0,
            _ => 0,
        };
        SimDuration(base.saturating_add(extra))
    }

    /// The stream's end: its last chunk.
    pub fn end(&self) -> SimDuration {
        self.at(self.chunks())
    }

    /// The gap before chunk `j` (1..=chunks()).
    pub fn gap(&self, j: u64) -> SimDuration {
        assert!(j >= 1);
        SimDuration(self.at(j).0 - self.at(j - 1).0)
    }

    /// The chunks whose gaps can be the longest: the first regular one (every regular gap
    /// but the last is the same or shorter), the stall's, the last. Ascending, distinct.
    fn candidates(&self) -> impl Iterator<Item = u64> {
        let mut v = [1, self.stall.map_or(1, |s| s.before), self.chunks()];
        v.sort_unstable();
        let mut last = 0;
        v.into_iter().filter(move |&j| {
            let fresh = j != last;
            last = j;
            fresh
        })
    }

    /// The longest gap between two chunks.
    pub fn max_gap(&self) -> SimDuration {
        self.candidates().map(|j| self.gap(j)).max().expect("at least one chunk")
    }

    /// When a client with read timeout `read_timeout` closes the stream (offset from the
    /// service start): the last chunk before the first gap longer than the timeout, plus
    /// the timeout. `None`: no gap is that long, or there is no read timeout (zero).
    pub fn close_at(&self, read_timeout: SimDuration) -> Option<SimDuration> {
        if read_timeout == SimDuration::ZERO {
            return None;
        }
        let j = self.candidates().find(|&j| self.gap(j) > read_timeout)?;
        let close = SimDuration(self.at(j - 1).0 + read_timeout.0);
        assert!(close < self.end(), "a stream is closed before it ends");
        Some(close)
    }

    /// Mean time per output token after the first chunk (`None` without output tokens).
    pub fn mean_token_gap(&self) -> Option<SimDuration> {
        (self.tokens > 0).then(|| SimDuration((self.end().0 - self.first.0) / self.tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_ms(x)
    }

    #[test]
    fn chunk_times_table() {
        // (service, per_token, tokens, chunk_tokens) → (first, chunks, at(1), at(last−1), end)
        let table = [
            // 6 s service, 500 tokens × 10 ms = 5 s output: first at 6 − 5 = 1 s; 500 chunks
            // of 1 token: at(1) = 1.01 s, at(499) = 1 + 4.99 = 5.99 s, end 6 s.
            ((6000, 10, 500, 1), (1000, 500, 1010, 5990, 6000)),
            // Chunks of 8 tokens: ⌈500 / 8⌉ = 63 chunks; at(1) = 1 + 80 ms; at(62) =
            // 1 + 496 × 10 ms = 5.96 s; the last carries 4 tokens: 5.96 → 6 s.
            ((6000, 10, 500, 8), (1000, 63, 1080, 5960, 6000)),
            // No output tokens: one chunk at the end, first = service.
            ((300, 10, 0, 1), (300, 1, 300, 300, 300)),
            // Output longer than the service (rounding, or a scripted duration): first at 0,
            // chunks clamped to the service: at(1) = 20, at(9) = min(180, 100) = 100.
            ((100, 20, 10, 1), (0, 10, 20, 100, 100)),
        ];
        for ((svc, tpot, n, k), (first, c, a1, alast, end)) in table {
            let s = StreamTiming::new(ms(svc), ms(tpot), n, k);
            let got = (s.first, s.chunks(), s.at(1), s.at(s.chunks() - 1), s.end());
            assert_eq!(got, (ms(first), c, ms(a1), ms(alast), ms(end)), "{svc} {tpot} {n} {k}");
        }
    }

    #[test]
    fn stall_position_table() {
        // 1 + ⌊after × (C − 1)⌋ for C = 500 chunks.
        let s = StreamTiming::new(ms(6000), ms(10), 500, 1);
        for (after, pos) in [(0.0, 1), (0.5, 250), (0.999, 499), (1.0, 500)] {
            assert_eq!(s.stall_position(after), pos, "after {after}");
        }
        // One chunk: the stall is always before it.
        assert_eq!(StreamTiming::new(ms(6), ms(1), 0, 1).stall_position(0.7), 1);
    }

    #[test]
    fn close_and_end_table() {
        let base = StreamTiming::new(ms(6000), ms(10), 500, 1);
        // (stall (before, extra ms), read timeout ms) → (close ms, end ms, max gap ms)
        type Row = (Option<(u64, u64)>, u64, Option<u64>, u64, u64);
        let table: [Row; 8] = [
            // No stall: gaps of 10 ms never exceed 20 s; ends at 6 s.
            (None, 20_000, None, 6000, 10),
            // A 30 s stall before chunk 250: gap = 10 ms + 30 s > 20 s → closed at chunk 249
            // (1 s + 249 × 10 ms = 3.49 s) + 20 s = 23.49 s. End would be 36 s.
            (Some((250, 30_000)), 20_000, Some(23_490), 36_000, 30_010),
            // Without a read timeout the stream just ends 30 s late.
            (Some((250, 30_000)), 0, None, 36_000, 30_010),
            // A 15 s stall under a 20 s read timeout: gap 15.01 s ≤ 20 s → finishes at 21 s.
            (Some((250, 15_000)), 20_000, None, 21_000, 15_010),
            // The 15 s no-chunk rule on the same stream: 15.01 s > 15 s → 3.49 + 15 = 18.49 s.
            (Some((250, 15_000)), 15_000, Some(18_490), 21_000, 15_010),
            // Gap exactly at the timeout (19.99 s + 10 ms = 20 s) is not longer: no close.
            (Some((250, 19_990)), 20_000, None, 25_990, 20_000),
            // Stall before chunk 1 (right after the first chunk at 1 s): 1 + 20 = 21 s.
            (Some((1, 30_000)), 20_000, Some(21_000), 36_000, 30_010),
            // Stall before the last chunk: chunk 499 at 5.99 s → 25.99 s.
            (Some((500, 30_000)), 20_000, Some(25_990), 36_000, 30_010),
        ];
        for (stall, r, close, end, max_gap) in table {
            let s = match stall {
                Some((b, x)) => base.with_stall(b, ms(x)),
                None => base,
            };
            assert_eq!(s.close_at(ms(r)), close.map(ms), "{stall:?} r={r}");
            assert_eq!((s.end(), s.max_gap()), (ms(end), ms(max_gap)), "{stall:?}");
        }
    }

    #[test]
    fn regular_gaps_longer_than_the_timeout_close_at_the_first_gap() {
        // Service 400 s, 1000 tokens × 300 ms = 300 s of output → first chunk at 100 s;
        // chunks of 100 tokens = 30 s gaps (a very slow model): the first gap exceeds 20 s
        // → closed at 100 + 20 = 120 s.
        let s = StreamTiming::new(ms(400_000), ms(300), 1000, 100);
        assert_eq!(s.chunks(), 10);
        assert_eq!(s.close_at(ms(20_000)), Some(ms(120_000)));
        // One chunk of 50 tokens × 1 s: the only gap is 50 s → closed at first + 20 s.
        let one = StreamTiming::new(ms(60_000), ms(1000), 50, 64);
        assert_eq!((one.first, one.chunks()), (ms(10_000), 1));
        assert_eq!(one.close_at(ms(20_000)), Some(ms(30_000)));
    }

    #[test]
    fn mean_token_gap() {
        // (36 s − 1 s) ÷ 500 tokens = 70 ms per token with a 30 s stall; 10 ms without.
        let base = StreamTiming::new(ms(6000), ms(10), 500, 1);
        assert_eq!(base.mean_token_gap(), Some(ms(10)));
        assert_eq!(base.with_stall(250, ms(30_000)).mean_token_gap(), Some(ms(70)));
        assert_eq!(StreamTiming::new(ms(6), ms(1), 0, 1).mean_token_gap(), None);
    }
}
