//! The governor kind table: the one place a governor kind is declared.
//!
//! Each row names a kind's variant (`GovernorRef::Gate`, `GovernorKind::Gate`), the
//! scenario list it is declared in (`gates`), its declaration type (serde + [`Params`] +
//! [`GovernorSpec`]) and its run-time state (a [`Governor`] implementing
//! [`GovernorKindOps`]). Everything else is derived from the table by the consumers that
//! invoke [`with_governor_kinds!`] with a callback macro:
//!
//! | derived | where |
//! | --- | --- |
//! | the scenario's governor lists (fields, defaults, `map_timeline`) | `scenario` |
//! | `GovernorRef` (its variants, `name`, `kind`, `list`, shadow refusal) | `scenario::govref` |
//! | declaration lists, uniqueness and range checks, registration, `set_param` | `scenario::govref` |
//! | `GovernorKind` (enum dispatch of [`Governor`]), building, run-time `apply_param`, rule reloads, summary counters, shadow copies | `callsite`, `govspec` |
//!
//! Adding a kind: its own file (the spec and the state, with the two trait impls) and one
//! row here (`docs/extending.md`). A row whose types lack an impl does not compile.
//!
//! Architecture invariant: the table order is the arena order (declared governors are built
//! and numbered kind by kind in this order, each in declaration order) and the order of the
//! summary's governor columns; append new kinds at the end, never reorder (fingerprints).
//!
//! [`Params`]: crate::params::Params
//! [`GovernorSpec`]: crate::params::GovernorSpec
//! [`Governor`]: crate::governor::Governor
//! [`GovernorKindOps`]: crate::governor::GovernorKindOps

/// Calls `$callback! { rows }` with the governor kind table. A row is
/// `/// doc` `Variant { list: field, spec: SpecType, state: StateType },`; attributes before
/// a row (serde) apply to its scenario list field.
#[macro_export]
macro_rules! with_governor_kinds {
    ($callback:ident) => {
        $callback! {
            /// A concurrency gate from `gates`.
            Gate { list: gates, spec: $crate::gate::GateSpec, state: $crate::gate::Gate },
            /// Sentinel flow rules (QPS, THREAD, pacing, warm-up), one resource each, from
            /// `flow_rules`.
            FlowRules {
                list: flow_rules,
                spec: $crate::flow::rules::FlowRulesSpec,
                state: $crate::flow::rules::FlowRules,
            },
            /// A Sentinel hot-parameter limit (per user or per key) from `param_flow_rules`.
            ParamFlow {
                list: param_flow_rules,
                spec: $crate::flow::hot_param::ParamFlowRuleSpec,
                state: $crate::flow::hot_param::ParamFlow,
            },
            /// A token bucket on tokens (TPM-style) from `token_buckets`.
            TokenBucket {
                list: token_buckets,
                spec: $crate::flow::token_bucket::TokenBucketSpec,
                state: $crate::flow::token_bucket::TokenBucket,
            },
            /// A retry policy (Resilience4j names; budgets) from `retries`.
            Retry { list: retries, spec: $crate::retry::RetrySpec, state: $crate::retry::Retry },
            /// A response cache (TTL, LRU, semantic hit probability, stale serving) from
            /// `caches`.
            Cache { list: caches, spec: $crate::cache::CacheSpec, state: $crate::cache::Cache },
            /// Single-flight (concurrent identical misses share one upstream call) from
            /// `single_flights`.
            SingleFlight {
                list: single_flights,
                spec: $crate::cache::singleflight::SingleFlightSpec,
                state: $crate::cache::singleflight::SingleFlight,
            },
            /// A Resilience4j circuit breaker from `circuit_breakers`.
            CircuitBreaker {
                list: circuit_breakers,
                spec: $crate::breaker::CircuitBreakerSpec,
                state: $crate::breaker::CircuitBreaker,
            },
            /// A Sentinel degrade rule (circuit breaker) from `degrade_rules`.
            DegradeRule {
                list: degrade_rules,
                spec: $crate::breaker::sentinel_degrade::DegradeRuleSpec,
                state: $crate::breaker::sentinel_degrade::DegradeBreaker,
            },
            /// A request batcher (window + max batch: one upstream call per batch) from
            /// `batchers`.
            Batcher {
                list: batchers,
                spec: $crate::batcher::BatcherSpec,
                state: $crate::batcher::governor::BatchGovernor,
            },
            /// A Resilience4j time limiter (a deadline from passing to the outcome) from
            /// `time_limiters`.
            TimeLimiter {
                list: time_limiters,
                spec: $crate::time_limiter::TimeLimiterSpec,
                state: $crate::time_limiter::TimeLimiter,
            },
            /// A Sentinel cluster flow rule (token server + local fallback) from
            /// `cluster_flow_rules`: one token server shared by all app instances; list
            /// `cluster_flow.<name>` in `per_instance` to give each instance its own client
            /// and local fallback rule.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            ClusterFlow {
                list: cluster_flow_rules,
                spec: $crate::flow::cluster::ClusterFlowRuleSpec,
                state: $crate::flow::cluster::ClusterFlow,
            },
            /// An adaptive concurrency limit (Netflix concurrency-limits `AIMDLimit`) from
            /// `aimd_limits`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            AimdLimit { list: aimd_limits, spec: $crate::aimd::AimdLimitSpec, state: $crate::aimd::AimdLimit },
            /// An adaptive concurrency limit (Netflix concurrency-limits `Gradient2Limit`)
            /// from `gradient2_limits`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            Gradient2Limit {
                list: gradient2_limits,
                spec: $crate::gradient2::Gradient2LimitSpec,
                state: $crate::gradient2::Gradient2Limit,
            },
            /// A Sentinel resource run as Sentinel's slot chain (its flow rules in
            /// `FlowRuleUtil` order, then its degrade rules) from `sentinel_resources`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            SentinelResource {
                list: sentinel_resources,
                spec: $crate::sentinel_resource::SentinelResourceSpec,
                state: $crate::sentinel_resource::SentinelResource,
            },
            /// An adaptive concurrency limit (Netflix concurrency-limits `VegasLimit`) from
            /// `vegas_limits`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            VegasLimit { list: vegas_limits, spec: $crate::vegas::VegasLimitSpec, state: $crate::vegas::VegasLimit },
            /// Envoy's adaptive concurrency filter (gradient controller) from
            /// `adaptive_concurrency_filters`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            AdaptiveConcurrency {
                list: adaptive_concurrency_filters,
                spec: $crate::adaptive_concurrency::AdaptiveConcurrencySpec,
                state: $crate::adaptive_concurrency::AdaptiveConcurrency,
            },
            /// The Google SRE book's client-side adaptive throttler (reject locally with
            /// probability max(0, (requests − K·accepts) / (requests + 1))) from
            /// `sre_throttlers`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            SreThrottler {
                list: sre_throttlers,
                spec: $crate::sre_throttle::SreThrottlerSpec,
                state: $crate::sre_throttle::SreThrottler,
            },
            /// Hedged requests (gRPC `hedgingPolicy`, a percentile delay, a hedge budget) from
            /// `hedges`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            Hedge { list: hedges, spec: $crate::hedge::HedgeSpec, state: $crate::hedge::Hedge },
            /// Resilience4j's `RateLimiter` (`AtomicRateLimiter`: `limit_for_period` permits per
            /// `limit_refresh_period` cycle, reservations within `timeout_duration`) from
            /// `rate_limiters`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            RateLimiter {
                list: rate_limiters,
                spec: $crate::rate_limiter::RateLimiterSpec,
                state: $crate::rate_limiter::RateLimiter,
            },
            /// Resilience4j's `ThreadPoolBulkhead` (`FixedThreadPoolBulkhead`: a
            /// `ThreadPoolExecutor` with an `ArrayBlockingQueue`, AbortPolicy) from
            /// `thread_pool_bulkheads`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            ThreadPoolBulkhead {
                list: thread_pool_bulkheads,
                spec: $crate::thread_pool_bulkhead::ThreadPoolBulkheadSpec,
                state: $crate::thread_pool_bulkhead::ThreadPoolBulkhead,
            },
            /// A concurrency limit whose waiting calls are managed by CoDel (RFC 8289, folly's
            /// `Codel::overloaded` or "Fail at Scale"'s queue timeouts) with adaptive LIFO, from
            /// `codel_queues`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            CodelQueue {
                list: codel_queues,
                spec: $crate::codel_queue::CodelQueueSpec,
                state: $crate::codel_queue::CodelQueue,
            },
            /// Netflix concurrency-limits' partitioned limiter (`AbstractPartitionedLimiter`
            /// over a `FixedLimit`: a guaranteed share per request class, idle shares borrowed)
            /// from `partitioned_limits`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            PartitionedLimit {
                list: partitioned_limits,
                spec: $crate::partitioned_limit::PartitionedLimitSpec,
                state: $crate::partitioned_limit::PartitionedLimit,
            },
            /// The Gateway API Inference Extension's flow control layer (`FlowController`:
            /// priority bands, round-robin or best-head fairness between flows, FCFS within a
            /// flow, a request TTL, sheddable priorities < 0 refused under saturation) from
            /// `flow_controllers`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            FlowController {
                list: flow_controllers,
                spec: $crate::flow_controller::FlowControllerSpec,
                state: $crate::flow_controller::FlowController,
            },
            /// A priority load shedder after Uber's Cinnamon (a priority queue by tier and
            /// cohort in front of a fixed inflight limit, arrivals beyond a PID-moved rejection
            /// threshold refused, a queue timeout) from `pid_shedders`.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            PidShedder {
                list: pid_shedders,
                spec: $crate::pid_shedder::PidShedderSpec,
                state: $crate::pid_shedder::PidShedder,
            },
        }
    };
}
