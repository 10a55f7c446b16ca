//! What a Java exception class or a gRPC status code stands for in the simulation: the
//! outcome reasons (`crate::outcome::Reason` names) a call meets that would have raised it.
//! The tables are documented in docs/import.md; a class or code not in them raises no
//! simulated outcome.

/// Reasons a refusal carries (`Outcome::Rejected`); the others are failures.
const REJECTED: [&str; 7] = [
    "queue_full",
    "gate_full",
    "pool_full",
    "rate_limited",
    "breaker_open",
    "upstream_429",
    "shed",
];

/// `failed:<reason>` or `rejected:<reason>`, as the breakers' outcome patterns read.
pub fn pattern(reason: &str) -> String {
    let kind = if REJECTED.contains(&reason) { "rejected" } else { "failed" };
    format!("{kind}:{reason}")
}

const IO: &[&str] = &["connect_error", "timeout", "stream_interrupted"];
pub(crate) const ALL: &[&str] = &crate::outcome::Reason::NAMES;

/// Java exception classes (by full name, or simple name) and the reasons they stand for.
const CLASSES: &[(&str, &[&str])] = &[
    ("java.lang.Throwable", ALL),
    ("java.lang.Exception", ALL),
    ("java.lang.RuntimeException", ALL),
    ("java.io.IOException", IO),
    ("java.io.UncheckedIOException", IO),
    ("java.net.ConnectException", &["connect_error"]),
    ("java.net.SocketTimeoutException", &["timeout"]),
    ("java.util.concurrent.TimeoutException", &["timeout"]),
    ("org.springframework.web.client.ResourceAccessException", IO),
    ("org.springframework.web.client.HttpServerErrorException", &["upstream_5xx"]),
    (
        "org.springframework.web.client.HttpClientErrorException",
        &["upstream_429", "business_error"],
    ),
    ("org.springframework.web.client.HttpClientErrorException$TooManyRequests", &["upstream_429"]),
    ("org.springframework.web.client.HttpClientErrorException.TooManyRequests", &["upstream_429"]),
    ("org.springframework.web.reactive.function.client.WebClientRequestException", IO),
    ("io.github.resilience4j.circuitbreaker.CallNotPermittedException", &["breaker_open"]),
    // Both bulkheads throw it: the semaphore one (a gate) and the thread-pool one.
    ("io.github.resilience4j.bulkhead.BulkheadFullException", &["gate_full", "pool_full"]),
    ("io.github.resilience4j.ratelimiter.RequestNotPermitted", &["rate_limited"]),
    ("feign.RetryableException", IO),
    ("feign.FeignException$TooManyRequests", &["upstream_429"]),
    ("feign.FeignException$InternalServerError", &["upstream_5xx"]),
    ("feign.FeignException$ServiceUnavailable", &["upstream_5xx"]),
    ("feign.FeignException$BadGateway", &["upstream_5xx"]),
    ("feign.FeignException$GatewayTimeout", &["upstream_5xx"]),
    ("feign.FeignServerException", &["upstream_5xx"]),
];

/// The reasons a Java exception class stands for; `None`: not a class the simulation
/// raises (an application's own exception).
pub fn java_class(name: &str) -> Option<&'static [&'static str]> {
    CLASSES.iter().find(|(c, _)| *c == name).map(|(_, r)| *r)
}

/// gRPC status codes by name and number, and the reasons they stand for (an empty list:
/// no simulated outcome carries the status).
const CODES: &[(&str, u32, &[&str])] = &[
    ("OK", 0, &[]),
    ("CANCELLED", 1, &[]),
    ("UNKNOWN", 2, &["upstream_5xx"]),
    ("INVALID_ARGUMENT", 3, &[]),
    ("DEADLINE_EXCEEDED", 4, &["timeout"]),
    ("NOT_FOUND", 5, &[]),
    ("ALREADY_EXISTS", 6, &[]),
    ("PERMISSION_DENIED", 7, &[]),
    ("RESOURCE_EXHAUSTED", 8, &["upstream_429"]),
    ("FAILED_PRECONDITION", 9, &[]),
    ("ABORTED", 10, &[]),
    ("OUT_OF_RANGE", 11, &[]),
    ("UNIMPLEMENTED", 12, &[]),
    ("INTERNAL", 13, &["upstream_5xx"]),
    ("UNAVAILABLE", 14, &["upstream_5xx", "connect_error", "stream_interrupted"]),
    ("DATA_LOSS", 15, &[]),
    ("UNAUTHENTICATED", 16, &[]),
];

/// A status code written as its name (any case, as grpc-java's parser accepts) or number:
/// its canonical name and reasons.
pub fn grpc_code(text: &str) -> Option<(&'static str, &'static [&'static str])> {
    let up = text.trim().to_ascii_uppercase();
    let num = up.parse::<u32>().ok();
    CODES.iter().find(|(n, c, _)| *n == up || Some(*c) == num).map(|(n, _, r)| (*n, *r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Reason;

    /// Every reason the tables name is a reason of the model (`ALL` is the model's list).
    #[test]
    fn reasons_are_the_models() {
        let names: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
        for (_, rs) in CLASSES {
            assert!(rs.iter().all(|r| names.contains(r)));
        }
        for (_, _, rs) in CODES {
            assert!(rs.iter().all(|r| names.contains(r)));
        }
        assert!(REJECTED.iter().all(|r| names.contains(r)));
    }
}
