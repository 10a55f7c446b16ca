//! Randomness: named ChaCha streams per purpose, and keyed per-request draws.
//!
//! Architecture invariant: no model code draws from a shared sequential generator for
//! per-request attributes. There are two kinds of randomness:
//!
//! * **Streams** — one ChaCha8 generator per named purpose (`"arrivals/chat"`), derived
//!   from `(master seed, stream name)`. Used where a process is inherently sequential and
//!   owned by one component, such as an arrival process's inter-arrival times.
//! * **Keyed draws** — a uniform computed from a key `(seed, source, sequence, call path,
//!   attempt, attribute)` by a counter-based mixer (SplitMix64 finalisers, ~ns per draw).
//!   Used for everything a request carries or meets: token counts, fan-out, cache key,
//!   service-time jitter, failure luck. Changing a policy can reorder events but never changes
//!   which numbers a request gets (common random numbers), and adding an attribute never
//!   shifts the others.
//!
//! Neither kind touches the wall clock or OS entropy.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// SplitMix64's finaliser: a bijective, well-mixing 64-bit hash.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a name, to turn stream and source names into stable 64-bit ids.
pub fn name_id(name: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Maps 64 random bits to a uniform in the open interval (0, 1).
#[inline]
pub fn bits_to_open01(bits: u64) -> f64 {
    // 53 significant bits, offset by half a step so neither 0 nor 1 is produced.
    ((bits >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A source of uniforms in (0, 1). Distributions sample through this trait, so the same
/// sampling code serves both streams and keyed draws.
pub trait UniformSource {
    fn next_open01(&mut self) -> f64;
}

/// One named ChaCha8 stream.
pub struct Stream(ChaCha8Rng);

impl Stream {
    pub fn new(master_seed: u64, name: &str) -> Stream {
        let mut seed = [0u8; 32];
        let a = mix64(master_seed ^ 0x5354_4f52_4d47_4c53); // "STORMGLS"
        let b = name_id(name);
        for (i, chunk) in seed.chunks_mut(8).enumerate() {
            let w = mix64(a ^ mix64(b.wrapping_add(i as u64)));
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Stream(ChaCha8Rng::from_seed(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl UniformSource for Stream {
    #[inline]
    fn next_open01(&mut self) -> f64 {
        bits_to_open01(self.0.next_u64())
    }
}

/// The keyed draws of one source in one run: the part of every [`DrawKey`]'s hash that
/// depends on the seed and the source only, computed once (a world keeps one per source)
/// instead of at every draw. `SourceKey::new(seed, source).request(seq)` is the same key,
/// with the same draws, as `DrawKey::request(seed, source, seq)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceKey(u64);

impl SourceKey {
    #[inline]
    pub fn new(seed: u64, source: u64) -> SourceKey {
        SourceKey(mix64(mix64(seed ^ 0xA076_1D64_78BD_642F) ^ source))
    }
    /// The key of request `sequence` of this source.
    #[inline]
    pub fn request(self, sequence: u64) -> DrawKey {
        DrawKey { source: self, sequence, call_path: 0, attempt: 0 }
    }
}

/// The key of one request's (or one call attempt's) randomness: `(seed, source, sequence,
/// call path, attempt)`, the seed and the source folded into a [`SourceKey`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrawKey {
    /// Master seed of the run and the stable id of the traffic source (use [`name_id`] of
    /// its name), hashed.
    pub source: SourceKey,
    /// Request sequence number within the source (or row of a trace, or user×turn).
    pub sequence: u64,
    /// Position of the call within the request's pipeline (0 for the request itself).
    pub call_path: u32,
    /// Attempt number (0 = first attempt).
    pub attempt: u32,
}

impl DrawKey {
    pub fn request(seed: u64, source: u64, sequence: u64) -> DrawKey {
        SourceKey::new(seed, source).request(sequence)
    }
    pub fn with_call(self, call_path: u32, attempt: u32) -> DrawKey {
        DrawKey { call_path, attempt, ..self }
    }
    #[inline]
    fn base(&self) -> u64 {
        let h = mix64(self.source.0 ^ self.sequence);
        mix64(h ^ ((self.call_path as u64) << 32 | self.attempt as u64))
    }
    /// The uniforms of one attribute: an endless, reproducible sequence (most attributes use
    /// one or two; rejection samplers may use more, without disturbing other attributes).
    #[inline]
    pub fn attribute(&self, attribute: u32) -> KeyedDraws {
        KeyedDraws {
            base: mix64(self.base() ^ (attribute as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            counter: 0,
        }
    }
    /// 64 raw random bits for an attribute (handed to governors as their call's own bits).
    #[inline]
    pub fn bits(&self, attribute: u32) -> u64 {
        mix64(self.base() ^ (attribute as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x6269_7473)
    }
    /// A single uniform for an attribute.
    #[inline]
    pub fn uniform(&self, attribute: u32) -> f64 {
        self.attribute(attribute).next_open01()
    }
}

/// The uniforms of one keyed attribute.
#[derive(Clone, Debug)]
pub struct KeyedDraws {
    base: u64,
    counter: u64,
}

impl UniformSource for KeyedDraws {
    #[inline]
    fn next_open01(&mut self) -> f64 {
        let bits = mix64(self.base.wrapping_add(self.counter.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        self.counter += 1;
        bits_to_open01(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The source's part of the hash, computed once, gives the draws of the full chain
    /// `mix(mix(mix(mix(seed ^ c) ^ source) ^ sequence) ^ (path << 32 | attempt))`.
    #[test]
    fn a_source_key_is_the_full_chain() {
        let (seed, source, seq, path, attempt) = (7u64, name_id("chat"), 42u64, 3u32, 1u32);
        let mut h = mix64(seed ^ 0xA076_1D64_78BD_642F);
        h = mix64(h ^ source);
        h = mix64(h ^ seq);
        let base = mix64(h ^ ((path as u64) << 32 | attempt as u64));
        let want = bits_to_open01(mix64(mix64(base ^ 5u64.wrapping_mul(0x9E37_79B9_7F4A_7C15))));
        let k = SourceKey::new(seed, source).request(seq).with_call(path, attempt);
        assert_eq!(k.uniform(5), want);
        assert_eq!(k, DrawKey::request(seed, source, seq).with_call(path, attempt));
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a1: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(7, "arrivals/a");
                move |_| s.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(7, "arrivals/a");
                move |_| s.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(7, "arrivals/b");
                move |_| s.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(8, "arrivals/a");
                move |_| s.next_u64()
            })
            .collect();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }

    #[test]
    fn keyed_draws_depend_only_on_their_key() {
        let k = DrawKey::request(1, name_id("chat"), 42);
        assert_eq!(k.uniform(3), k.uniform(3));
        assert_ne!(k.uniform(3), k.uniform(4));
        assert_ne!(k.uniform(3), k.with_call(1, 0).uniform(3));
        assert_ne!(k.with_call(1, 0).uniform(3), k.with_call(1, 1).uniform(3));
        assert_ne!(k.uniform(3), DrawKey::request(1, name_id("chat"), 43).uniform(3));
    }

    #[test]
    fn keyed_uniforms_are_uniform() {
        // Mean and variance of 200k keyed uniforms: 1/2 and 1/12, within 4 standard errors.
        let n = 200_000u64;
        let (mut s, mut s2) = (0.0, 0.0);
        for i in 0..n {
            let u = DrawKey::request(9, 1, i).uniform(0);
            assert!(u > 0.0 && u < 1.0);
            s += u;
            s2 += u * u;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        let se_mean = (1.0f64 / 12.0 / n as f64).sqrt();
        assert!((mean - 0.5).abs() < 4.0 * se_mean, "mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < 0.002, "var {var}");
    }
}
