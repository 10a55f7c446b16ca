//! Automatic prefix caching of a [`super::Server`]'s KV cache, as vLLM V1 does it: KV in
//! blocks of `block_size` tokens, every *full* block named by a hash chained with its
//! parent's, a block freed by its last sequence kept (and findable by its hash) until the
//! pool needs it, and a new sequence's prompt reusing the longest run of cached blocks.
//!
//! The rules and the vLLM function each follows (vllm/v1/core/, V1 engine):
//!
//! - A block's hash is `H(parent's hash, the block's tokens)` (`kv_cache_utils.py`:
//!   `hash_block_tokens`), so two blocks match only when *every* token before them matches.
//!   Here a token is named by the prompt segment it belongs to and its offset in it
//!   ([`PromptPrefix`]): equal segment contents = equal tokens.
//! - Only full blocks are cached: `cache_blocks` registers `num_tokens // block_size` blocks
//!   (`single_type_kv_cache_manager.py`), when their tokens are *scheduled*
//!   (`KVCacheManager.allocate_slots` → `cache_blocks`); a partial last block is not
//!   findable until it fills (with the sequence's own output tokens, so never by another
//!   prompt).
//! - A lookup walks the prompt's hashes from the first block and stops at the first miss
//!   (`FullAttentionManager.find_longest_cache_hit`), over at most `num_tokens − 1` tokens:
//!   a fully cached prompt still recomputes its last token, and so its last block
//!   (`KVCacheManager.get_computed_blocks`: `max_cache_hit_length = request.num_tokens − 1`).
//!   Of several blocks with one hash the first cached is used (`BlockPool.get_cached_block`).
//! - Admission needs `ceil(tokens / block_size) − hits` new blocks plus every hit block with
//!   a reference count of 0 (it leaves the free queue): `get_num_blocks_to_allocate`;
//!   refused when that exceeds the free blocks (`allocate_slots` returns `None`).
//! - A hit block gains a reference and leaves the free queue if it was there
//!   (`BlockPool.touch`); a new block is the free queue's head, its cached hash dropped if
//!   it had one — an eviction (`BlockPool.get_new_blocks`, `_maybe_evict_cached_block`).
//! - A sequence that finishes, is preempted or is cancelled frees its blocks in reverse
//!   order (`SingleTypeKVCacheManager.free`: "tail blocks are evicted first"); a block whose
//!   count reaches 0 is appended to the free queue's tail (`BlockPool.free_blocks`), so the
//!   queue is least-recently-freed first: LRU eviction of unreferenced blocks. A block a
//!   running sequence holds is never evicted.
//! - The free queue starts as every block in id order (`FreeKVCacheBlockQueue`); here the
//!   blocks never used yet are that queue's head, counted, not materialised.
//!
//! Not modelled: vLLM's null block (block 0, one block of the pool), the hash seed
//! (`NONE_HASH`), LoRA/multimodal extra keys and cache salts.
//!
//! Architecture invariant: `used + free = num_blocks`; a block is referenced (count > 0,
//! not in the free queue) or free (in it); the hash map holds exactly the blocks with a
//! hash; `cached_free` counts the free blocks with one.
//!
//! API boundary: [`PromptPrefix`] is what a caller says about a prompt; [`BlockPool`] and
//! [`SeqBlocks`] are the server's (`server_batch.rs` drives them).

use sim_core::rng::mix64;
use std::collections::BTreeMap;

/// Most segments in one prompt's prefix.
pub const MAX_PREFIX_SEGMENTS: usize = 8;
/// Largest block size (vLLM's CUDA block sizes are 8, 16, 32, … at most a few hundred).
pub const MAX_BLOCK_SIZE: u64 = 1024;
/// Most blocks in a pool with prefix caching: 2²⁴ (268 M tokens at 16 a block, ~300× one
/// H200's KV). A sequence's hash chain is at most one `u64` a block of its KV, so this
/// bounds it (128 MiB) however long a prompt a scenario writes.
pub const MAX_KV_BLOCKS: u64 = 1 << 24;

/// How a prompt begins: segments of shared text, in order, each named by its content (the
/// same content = the same tokens at the same offsets) and its length in tokens. The prompt
/// is laid out segment after segment, cut at its own length; what follows is its own
/// (unique to the sequence, as are its output tokens). Two prompts share a token exactly
/// when every token before it is shared too — the chain the block hashes follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PromptPrefix {
    segs: [(u64, u64); MAX_PREFIX_SEGMENTS],
    len: u8,
}

impl PromptPrefix {
    /// No shared prefix: every token of the prompt is the sequence's own.
    pub const NONE: PromptPrefix = PromptPrefix { segs: [(0, 0); MAX_PREFIX_SEGMENTS], len: 0 };

    /// Appends a segment of `tokens` tokens of content `content`; `false` (unchanged) when
    /// it already holds [`MAX_PREFIX_SEGMENTS`].
    pub fn push(&mut self, content: u64, tokens: u64) -> bool {
        let i = self.len as usize;
        if i == MAX_PREFIX_SEGMENTS {
            return false;
        }
        self.segs[i] = (content, tokens);
        self.len += 1;
        true
    }

    /// The segments, `(content, tokens)` in order.
    pub fn segments(&self) -> &[(u64, u64)] {
        &self.segs[..self.len as usize]
    }
}

/// The hash chain's start (vLLM's `NONE_HASH`; a constant here).
const NONE_HASH: u64 = 0x5052_4546_4958_0001; // "PREFIX"
/// Salt of a sequence's own content (its unique prompt tail and its output).
const OWN_SALT: u64 = 0x4f57_4e5f_5441_494c; // "OWN_TAIL"

/// The content id of sequence `id`'s own tokens.
pub(super) fn own_content(id: u64) -> u64 {
    mix64(id ^ OWN_SALT)
}

/// The hash of block `i`'s tokens alone: the pieces of content it covers, each named by
/// (content, offset in that content, length). `prompt` cuts the prefix; the sequence's own
/// content (`own`) runs from the end of the cut prefix on, for ever.
fn block_content(prefix: &PromptPrefix, prompt: u64, own: u64, bs: u64, i: u64) -> u64 {
    let (a, b) = (i * bs, (i + 1) * bs);
    let mut acc = 0u64;
    let mut piece = |content: u64, offset: u64, len: u64| {
        acc = mix64(acc.rotate_left(23) ^ content ^ mix64(offset ^ (len << 44)));
    };
    let mut pos = 0u64;
    for &(content, tokens) in prefix.segments() {
        let end = pos + tokens.min(prompt - pos);
        let (lo, hi) = (a.max(pos), b.min(end));
        if lo < hi {
            piece(content, lo - pos, hi - lo);
        }
        pos = end;
    }
    let lo = a.max(pos);
    if lo < b {
        piece(own, lo - pos, b - lo);
    }
    acc
}

/// Extends `hashes` (the chain of a sequence's first blocks) to `n` blocks.
pub(super) fn extend_hashes(
    hashes: &mut Vec<u64>,
    n: u64,
    prefix: &PromptPrefix,
    prompt: u64,
    own: u64,
    bs: u64,
) {
    while (hashes.len() as u64) < n {
        let i = hashes.len() as u64;
        let parent = hashes.last().copied().unwrap_or(NONE_HASH);
        hashes.push(mix64(parent ^ mix64(block_content(prefix, prompt, own, bs, i))));
    }
}

/// A sequence's blocks (prefix caching only).
#[derive(Clone, Debug, Default)]
pub(super) struct SeqBlocks {
    pub prefix: PromptPrefix,
    /// Content id of its own tokens.
    pub own: u64,
    /// Its blocks, in token order (empty while waiting).
    pub blocks: Vec<u32>,
    /// The hash chain of its first blocks (kept across preemptions, as vLLM keeps
    /// `request.block_hashes`).
    pub hashes: Vec<u64>,
    /// Its first blocks registered in the cache (vLLM's `num_cached_block`).
    pub num_cached: usize,
}

/// An admission worked out before it is made: the cached blocks it reuses and the blocks
/// the pool must give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Admission {
    pub hit_blocks: u64,
    pub need: u64,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Block {
    ref_cnt: u32,
    hash: Option<u64>,
    prev: u32,
    next: u32,
}

/// Counters of a pool (monotone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefixStats {
    /// Admissions looked up, and those that reused at least one block.
    pub lookups: u64,
    pub hit_lookups: u64,
    /// Tokens admitted (prompt + tokens to recompute) and those found cached.
    pub query_tokens: u64,
    pub hit_tokens: u64,
    /// Cached blocks dropped to give a block to a sequence.
    pub evictions: u64,
}

/// The block pool: reference counts, the free queue (LRU order) and the hash → block map.
#[derive(Clone, Debug)]
pub(super) struct BlockPool {
    pub block_size: u64,
    num_blocks: u64,
    /// Blocks `blocks.len()..num_blocks` were never used: the free queue's head, in id order.
    blocks: Vec<Block>,
    /// The rest of the free queue, a linked list of used-then-freed blocks (head first).
    head: u32,
    tail: u32,
    recycled_free: u64,
    /// Hash → the blocks holding it, first cached first (vLLM does not de-duplicate).
    cached: BTreeMap<u64, Vec<u32>>,
    /// Blocks referenced by running sequences; free blocks that hold a cached hash.
    pub used: u64,
    pub cached_free: u64,
    pub stats: PrefixStats,
}

impl BlockPool {
    pub fn new(num_blocks: u64, block_size: u64) -> BlockPool {
        assert!((1..=MAX_KV_BLOCKS).contains(&num_blocks) && block_size >= 1);
        BlockPool {
            block_size,
            num_blocks,
            blocks: Vec::new(),
            head: NIL,
            tail: NIL,
            recycled_free: 0,
            cached: BTreeMap::new(),
            used: 0,
            cached_free: 0,
            stats: PrefixStats::default(),
        }
    }

    pub fn num_blocks(&self) -> u64 {
        self.num_blocks
    }

    /// Blocks used at least once so far.
    pub fn materialised(&self) -> usize {
        self.blocks.len()
    }

    /// Blocks in the free queue (never used, free, or cached and unreferenced).
    pub fn free(&self) -> u64 {
        (self.num_blocks - self.blocks.len() as u64) + self.recycled_free
    }

    /// Blocks for `tokens` tokens.
    pub fn blocks_for(&self, tokens: u64) -> u64 {
        tokens.div_ceil(self.block_size)
    }

    /// The block cached under `hash`, if any (the first cached).
    fn get_cached(&self, hash: u64) -> Option<u32> {
        self.cached.get(&hash).map(|v| v[0])
    }

    /// What admitting `seq` with `target` tokens (prompt + tokens to recompute) takes:
    /// the longest cached run of its first blocks within `target − 1` tokens, and the
    /// blocks the pool must give (`get_num_blocks_to_allocate`).
    pub fn plan(&self, seq: &mut SeqBlocks, prompt: u64, target: u64) -> Admission {
        let bs = self.block_size;
        let max_blocks = target.saturating_sub(1) / bs;
        extend_hashes(&mut seq.hashes, max_blocks, &seq.prefix, prompt, seq.own, bs);
        let mut hits = 0;
        let mut evictable = 0;
        for &h in &seq.hashes[..max_blocks as usize] {
            let Some(b) = self.get_cached(h) else { break };
            hits += 1;
            evictable += u64::from(self.blocks[b as usize].ref_cnt == 0);
        }
        Admission { hit_blocks: hits, need: self.blocks_for(target) - hits + evictable }
    }

    /// Admits `seq` by `plan` (made just before, nothing changed since): touches its hit
    /// blocks, takes the rest from the free queue's head. Returns the tokens found cached.
    pub fn admit(&mut self, seq: &mut SeqBlocks, plan: Admission, target: u64) -> u64 {
        assert!(seq.blocks.is_empty() && plan.need <= self.free(), "a planned admission");
        for i in 0..plan.hit_blocks as usize {
            let b = self.get_cached(seq.hashes[i]).expect("planned hit");
            self.touch(b);
            seq.blocks.push(b);
        }
        for _ in plan.hit_blocks..self.blocks_for(target) {
            let b = self.take_free();
            seq.blocks.push(b);
        }
        seq.num_cached = plan.hit_blocks as usize;
        let hit_tokens = plan.hit_blocks * self.block_size;
        let s = &mut self.stats;
        s.lookups += 1;
        s.hit_lookups += u64::from(plan.hit_blocks > 0);
        s.query_tokens += target;
        s.hit_tokens += hit_tokens;
        hit_tokens
    }

    /// One more block for `seq` (a decode crossing a block boundary); `false` when none
    /// is free.
    pub fn grow(&mut self, seq: &mut SeqBlocks) -> bool {
        if self.free() == 0 {
            return false;
        }
        let b = self.take_free();
        seq.blocks.push(b);
        true
    }

    /// Registers `seq`'s full blocks among its first `tokens` tokens (`cache_blocks`).
    pub fn cache_full(&mut self, seq: &mut SeqBlocks, prompt: u64, tokens: u64) {
        let full = (tokens / self.block_size) as usize;
        if full <= seq.num_cached {
            return;
        }
        extend_hashes(&mut seq.hashes, full as u64, &seq.prefix, prompt, seq.own, self.block_size);
        for i in seq.num_cached..full {
            let (b, h) = (seq.blocks[i], seq.hashes[i]);
            let block = &mut self.blocks[b as usize];
            debug_assert!(block.hash.is_none() && block.ref_cnt > 0);
            block.hash = Some(h);
            self.cached.entry(h).or_default().push(b);
        }
        seq.num_cached = full;
    }

    /// Frees `seq`'s blocks, tail first (`SingleTypeKVCacheManager.free`).
    pub fn release(&mut self, seq: &mut SeqBlocks) {
        for b in seq.blocks.drain(..).rev() {
            let block = &mut self.blocks[b as usize];
            block.ref_cnt -= 1;
            if block.ref_cnt == 0 {
                self.used -= 1;
                self.cached_free += u64::from(block.hash.is_some());
                self.push_tail(b);
            }
        }
        seq.num_cached = 0;
    }

    /// A hit block gains a reference, leaving the free queue if it was in it.
    fn touch(&mut self, b: u32) {
        if self.blocks[b as usize].ref_cnt == 0 {
            self.unlink(b);
            self.used += 1;
            self.cached_free -= 1;
        }
        self.blocks[b as usize].ref_cnt += 1;
    }

    /// The free queue's head, evicting its cached hash if it has one; referenced once.
    fn take_free(&mut self) -> u32 {
        let b = if (self.blocks.len() as u64) < self.num_blocks {
            self.blocks.push(Block { ref_cnt: 0, hash: None, prev: NIL, next: NIL });
            (self.blocks.len() - 1) as u32
        } else {
            let b = self.head;
            assert_ne!(b, NIL, "a free block");
            self.unlink(b);
            if let Some(h) = self.blocks[b as usize].hash.take() {
                let holders = self.cached.get_mut(&h).expect("a cached hash");
                holders.retain(|&x| x != b);
                if holders.is_empty() {
                    self.cached.remove(&h);
                }
                self.cached_free -= 1;
                self.stats.evictions += 1;
            }
            b
        };
        self.blocks[b as usize].ref_cnt = 1;
        self.used += 1;
        b
    }

    fn unlink(&mut self, b: u32) {
        let (prev, next) = (self.blocks[b as usize].prev, self.blocks[b as usize].next);
        match prev {
            NIL => self.head = next,
            p => self.blocks[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.blocks[n as usize].prev = prev,
        }
        let block = &mut self.blocks[b as usize];
        (block.prev, block.next) = (NIL, NIL);
        self.recycled_free -= 1;
    }

    fn push_tail(&mut self, b: u32) {
        self.blocks[b as usize].prev = self.tail;
        self.blocks[b as usize].next = NIL;
        match self.tail {
            NIL => self.head = b,
            t => self.blocks[t as usize].next = b,
        }
        self.tail = b;
        self.recycled_free += 1;
    }

    /// The free queue's used-then-freed part, head first (for tests and checks).
    pub fn recycled_order(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut b = self.head;
        while b != NIL {
            out.push(b);
            b = self.blocks[b as usize].next;
        }
        out
    }

    /// Is `hash` cached (findable)?
    pub fn is_cached(&self, hash: u64) -> bool {
        self.cached.contains_key(&hash)
    }

    /// The invariants of the module doc, against the reference counts `refs` the running
    /// sequences imply (block id → count).
    pub fn check(&self, refs: &BTreeMap<u32, u32>) {
        let free: Vec<u32> = self.recycled_order();
        assert_eq!(free.len() as u64, self.recycled_free, "free queue length");
        assert_eq!(self.used + self.free(), self.num_blocks, "blocks conserved");
        let mut cached_free = 0;
        for (i, b) in self.blocks.iter().enumerate() {
            let want = refs.get(&(i as u32)).copied().unwrap_or(0);
            assert_eq!(b.ref_cnt, want, "block {i}: reference count");
            if b.ref_cnt == 0 {
                cached_free += u64::from(b.hash.is_some());
            }
            if let Some(h) = b.hash {
                assert!(self.cached[&h].contains(&(i as u32)), "block {i} findable");
            }
        }
        assert_eq!(cached_free, self.cached_free, "cached free blocks");
        assert_eq!(refs.len() as u64, self.used, "referenced blocks");
        let held: usize = self.cached.values().map(Vec::len).sum();
        let hashed = self.blocks.iter().filter(|b| b.hash.is_some()).count();
        assert_eq!(held, hashed, "the map holds exactly the hashed blocks");
    }
}
