//! The order Sentinel checks one resource's flow rules in (`FlowRuleUtil.buildFlowRuleMap`).
//!
//! Sentinel 1.8.x groups the loaded flow rules by resource into a `java.util.HashSet` ("to
//! remove duplicate rules"), copies each set into a list and sorts it with
//! `FlowRuleComparator` (non-cluster before cluster, a specific `limitApp` before
//! `default`). Every rule stormglass runs in one resource is a non-cluster rule for the
//! `default` app, so the comparator finds them all equal and `Collections.sort` (stable)
//! keeps the set's iteration order: the order `FlowSlot` checks the rules in is the
//! `HashSet`'s, decided by `FlowRule.hashCode()` — not the order the rules were written.
//!
//! Key design decision: the order is computed, not approximated. [`flow_rule_hash`] is
//! `FlowRule.hashCode()` as Sentinel 1.8.9 computes it: `AbstractRule.hashCode()` (the
//! resource name's `String.hashCode()`, `limitApp` left out when it is `default`, then the
//! `regex` flag) continued by `FlowRule`'s own fields, in Java `int` arithmetic. Which
//! release added which field (a scenario names no Sentinel release, so stormglass follows
//! 1.8.9, the latest 1.8.x):
//!
//! | field | in the hash since |
//! |---|---|
//! | resource, limitApp (not `default`), grade, count, strategy, refResource, controlBehavior, warmUpPeriodSec, maxQueueingTimeMs | before 1.4.0 |
//! | clusterMode, clusterConfig | 1.4.0 (cluster flow control) |
//! | regex (`AbstractRule`, folded in before `FlowRule`'s fields) | 1.8.7 (regex resource names) |
//!
//! Leaving `regex` out multiplies the resource's hash by one power of 31 less and so
//! changes the bucket, and thus the order, of most rule sets (resource "llm": pacing 10/s
//! and reject 2/s were checked pacing first before 1.8.7, reject first since).
//!
//! [`hash_set_order`] is the iteration order of a `HashSet` filled in the
//! written order (a `HashMap` table of 16 buckets, doubled past 0.75 load or when a bucket
//! reaches 9 entries while the table is smaller than 64; bucket `(h ^ h >>> 16) & (n − 1)`;
//! each bucket in insertion order, which a resize preserves). A bucket that Java would turn
//! into a tree (9 entries in one bucket of a 64-bucket table) is refused: its order is not
//! reproduced (it cannot happen with 16 rules unless their hashes collide on 6 bits nine
//! times over).
//!
//! API boundary: pure functions of the resource name and the rules.

use super::rules::{ControlBehavior, FlowGrade, FlowRule};

/// `java.lang.String.hashCode()`: `s[0]·31^(n−1) + … + s[n−1]` over UTF-16 code units,
/// in wrapping `int` arithmetic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// `RuleConstant.FLOW_GRADE_*`.
fn grade_code(g: FlowGrade) -> i32 {
    match g {
        FlowGrade::Thread => 0,
        FlowGrade::Qps => 1,
    }
}

/// `RuleConstant.CONTROL_BEHAVIOR_*`.
fn behavior_code(b: ControlBehavior) -> i32 {
    match b {
        ControlBehavior::Default => 0,
        ControlBehavior::WarmUp => 1,
        ControlBehavior::RateLimiter => 2,
        ControlBehavior::WarmUpRateLimiter => 3,
    }
}

/// `AbstractRule.hashCode()` (Sentinel 1.8.9) of a rule on `resource` with `limitApp`
/// `default` (left out of the hash) and `regex` false: `31 · resource.hashCode() + 0`. The
/// `regex` term is there since 1.8.7; before it the result was the resource's hash alone.
fn abstract_rule_hash(resource: &str) -> i32 {
    let regex = 0; // stormglass names resources exactly: `regex` is false
    java_string_hash(resource).wrapping_mul(31).wrapping_add(regex)
}

/// `FlowRule.hashCode()` of `rule` on `resource` (Sentinel 1.8.9): `super.hashCode()`
/// ([`abstract_rule_hash`]), then grade, `count` (`Double.doubleToLongBits`, high and low
/// words xor-ed), strategy (DIRECT = 0), refResource (null = 0), controlBehavior,
/// warmUpPeriodSec, maxQueueingTimeMs, clusterMode (false = 0), clusterConfig (null = 0),
/// each folded in as `31 · h + field`. stormglass's own fields (`cold_factor` — a global
/// property in Sentinel — and `max_queue_length`) are not part of Sentinel's rule.
pub fn flow_rule_hash(resource: &str, rule: &FlowRule) -> i32 {
    let bits = rule.count.to_bits();
    let fields = [
        grade_code(rule.grade),
        (bits ^ (bits >> 32)) as i32,
        0,
        0,
        behavior_code(rule.control_behavior),
        rule.warm_up_period_sec as i32,
        rule.max_queueing_time_ms as i32,
        0,
        0,
    ];
    fields.iter().fold(abstract_rule_hash(resource), |h, &f| h.wrapping_mul(31).wrapping_add(f))
}

/// `FlowRule.equals` over Sentinel's fields (`AbstractRule.equals`: same resource, same
/// `limitApp`, same `regex` — all alike here): two such rules are one element of the set.
pub fn sentinel_equal(a: &FlowRule, b: &FlowRule) -> bool {
    a.grade == b.grade
        && a.count.to_bits() == b.count.to_bits()
        && a.control_behavior == b.control_behavior
        && a.warm_up_period_sec == b.warm_up_period_sec
        && a.max_queueing_time_ms == b.max_queueing_time_ms
}

/// The iteration order of a `java.util.HashSet` into which distinct elements with these
/// hash codes were added in this order: indices into `hashes`. `Err` when Java would
/// treeify a bucket (see the module doc).
pub fn hash_set_order(hashes: &[i32]) -> Result<Vec<usize>, String> {
    const TREEIFY_THRESHOLD: usize = 8;
    const MIN_TREEIFY_CAPACITY: usize = 64;
    let spread: Vec<u32> = hashes.iter().map(|&h| (h as u32) ^ ((h as u32) >> 16)).collect();
    let mut cap = 16usize;
    let bucket = |i: usize, cap: usize| spread[i] as usize & (cap - 1);
    for i in 0..hashes.len() {
        // `putVal`: appending to a bin that already holds 8 entries calls `treeifyBin`,
        // which only resizes while the table is smaller than 64.
        let in_bin = (0..i).filter(|&j| bucket(j, cap) == bucket(i, cap)).count();
        if in_bin >= TREEIFY_THRESHOLD {
            if cap >= MIN_TREEIFY_CAPACITY {
                return Err(format!(
                    "{} flow rules share one hash bucket of a {cap}-bucket table: Sentinel's \
                     HashSet would make it a tree, whose order stormglass does not reproduce",
                    in_bin + 1
                ));
            }
            cap *= 2;
        }
        // `++size > threshold` (0.75 · capacity) doubles the table.
        if i + 1 > cap / 4 * 3 {
            cap *= 2;
        }
    }
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    order.sort_by_key(|&i| (bucket(i, cap), i));
    Ok(order)
}

/// The order `FlowSlot` checks `rules` (as written, all distinct in Sentinel's fields) on
/// `resource`: indices into `rules`.
pub fn sentinel_flow_order(resource: &str, rules: &[FlowRule]) -> Result<Vec<usize>, String> {
    let hashes: Vec<i32> = rules.iter().map(|r| flow_rule_hash(resource, r)).collect();
    hash_set_order(&hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `String.hashCode()` values printed by OpenJDK 17.0.15: `"".hashCode()`,
    /// `"chat".hashCode()`, `"GET:/v1/chat".hashCode()`, `"é".hashCode()`.
    #[test]
    fn java_string_hash_table() {
        let table = [("", 0), ("chat", 3_052_376), ("GET:/v1/chat", -832_817_375), ("é", 233)];
        for (s, h) in table {
            assert_eq!(java_string_hash(s), h, "{s:?}");
        }
    }

    /// `FlowRule.hashCode()` (with `AbstractRule.hashCode()`, Sentinel 1.8.9) of rules on
    /// resource "chat": each row printed by a Java program (OpenJDK 17.0.15) folding the
    /// fields of those two methods with `31 * result + field` in `int`. The first row is
    /// also what Sentinel 1.8.9 itself gives `new FlowRule("chat").setCount(10)` (measured
    /// for issue 32); without the `regex` term (Sentinel ≤ 1.8.6) it was 477 232 979.
    #[test]
    fn flow_rule_hash_table() {
        let qps = |c: f64, b| FlowRule::qps(c, b);
        let table = [
            // (rule, hash, why)
            (qps(10.0, ControlBehavior::Default), 1_134_335_235, "QPS 10, defaults 10 s, 500 ms"),
            (
                qps(10.0, ControlBehavior::RateLimiter),
                1_136_182_277,
                "behaviour 2: + 2·31^4 (four fields follow it)",
            ),
            (FlowRule::thread(10.0), -1_353_177_598, "grade 0: − 31^8 from the first (wrapping)"),
            (qps(2.5, ControlBehavior::Default), -1_480_813_309, "count bits 0x4004000000000000"),
        ];
        for (rule, h, why) in table {
            assert_eq!(flow_rule_hash("chat", &rule), h, "{why}");
        }
        // `AbstractRule.hashCode()` alone: 31 · "chat".hashCode() + (regex ? 1 : 0).
        assert_eq!(abstract_rule_hash("chat"), 3_052_376 * 31);
    }

    /// Resource "llm", pacing 10/s and reject 2/s: with the `regex` term (1.8.9) the reject
    /// rule's bucket (0) comes before the pacing rule's (11), in either written order
    /// (OpenJDK 17.0.15's `HashSet` prints [cap, pace] both ways); without it (≤ 1.8.6,
    /// buckets 12 and 10) the pacing rule came first.
    #[test]
    fn regex_term_decides_the_order_on_llm() {
        let pace = FlowRule::qps(10.0, ControlBehavior::RateLimiter);
        let cap = FlowRule::qps(2.0, ControlBehavior::Default);
        assert_eq!(flow_rule_hash("llm", &pace), -413_065_894);
        assert_eq!(flow_rule_hash("llm", &cap), -1_746_342_312);
        assert_eq!(sentinel_flow_order("llm", &[pace.clone(), cap.clone()]).unwrap(), [1, 0]);
        assert_eq!(sentinel_flow_order("llm", &[cap, pace]).unwrap(), [0, 1]);
    }

    /// Iteration orders of a `java.util.HashSet<Integer>`-like set of keys with these hash
    /// codes, printed by OpenJDK 17.0.15 (a key class whose `hashCode()` is the given value).
    /// (hashes, order, why)
    #[test]
    fn hash_set_order_table() {
        let table: [(&[i32], &[usize], &str); 5] = [
            (&[3, 1, 2], &[1, 2, 0], "buckets 3, 1, 2 of 16"),
            (&[17, 1], &[0, 1], "same bucket 1: insertion order"),
            (&[1 << 16, 0], &[1, 0], "h ^ h>>>16: 65536 spreads to bucket 1"),
            (&[-1, 0], &[0, 1], "−1 spreads to 0xFFFF0000: bucket 0, before the later 0"),
            (
                &[15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 16],
                &[11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 12],
                "13th element: table 32, 16 lands in bucket 16, after 15",
            ),
        ];
        for (hashes, order, why) in table {
            assert_eq!(hash_set_order(hashes).unwrap(), order, "{why}");
        }
    }

    /// Nine entries in one bucket: the table doubles (16 → 32 → 64) instead of treeifying,
    /// then a tree bin is refused.
    #[test]
    fn colliding_buckets_resize_then_refuse() {
        // Multiples of 64 all land in bucket 0 up to a 64-bucket table.
        let nine: Vec<i32> = (0..9).map(|i| i * 64).collect();
        assert_eq!(hash_set_order(&nine).unwrap(), (0..9).collect::<Vec<_>>());
        // Ten: 16 → 32 at the 9th, → 64 at the 10th, still a list (Java prints 0‥9).
        let ten: Vec<i32> = (0..10).map(|i| i * 64).collect();
        assert_eq!(hash_set_order(&ten).unwrap(), (0..10).collect::<Vec<_>>());
        let eleven: Vec<i32> = (0..11).map(|i| i * 64).collect();
        assert!(hash_set_order(&eleven).unwrap_err().contains("tree"));
        // Multiples of 16 separate at 32 buckets: 0, 32, 64… in bucket 0, 16, 48… in 16.
        let spread: Vec<i32> = (0..9).map(|i| i * 16).collect();
        assert_eq!(hash_set_order(&spread).unwrap(), vec![0, 2, 4, 6, 8, 1, 3, 5, 7]);
    }
}
