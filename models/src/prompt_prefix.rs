//! What a source's prompts share: a chain of prefix segments (a system prompt shared by a
//! class, a document shared by a cache key, a conversation's history shared by a user),
//! which a GPU server with prefix caching reuses (`gpu/prefix.rs`).
//!
//! `prefix: [Prefix(scope: Class, tokens: Fixed(1200)), Prefix(scope: Key, tokens:
//! Fixed(3000)), Prefix(scope: User, tokens: History)]` lays out each request's prompt as
//! its class's 1,200-token system prompt, then the 3,000-token document of its cache key,
//! then its user's conversation so far (as long as the request's `history_tokens`), then
//! its own tokens. The segments are carved out of the prompt (its `prompt_tokens`, a
//! trace's column, or a trimmed call's prompt), in order, and cut at its length: they say
//! what the prompt's tokens are, never how many there are, so nothing but a GPU server
//! with prefix caching sees them.
//!
//! Key design decision: a segment's tokens are named by (its place in the list, its scope,
//! the request's value of that scope, the token's offset in the segment), so two requests
//! share a token exactly when they agree on all of these — the same class's system prompt
//! is the same text; two turns of one user share the first `min(h₁, h₂)` tokens of their
//! history. A scope value the request lacks (user or key 0) makes the segment the
//! request's own.
//!
//! Architecture invariant: at most [`MAX_PREFIX_SEGMENTS`] segments; building a prompt's
//! prefix draws nothing (it reads attributes already drawn), so a prefix list moves no
//! other random number.
//!
//! API boundary: [`PrefixSegment`] is scenario data on `SourceSpec::prefix`; the world
//! calls [`prompt_prefix`] when it sends a call to a GPU server.

use crate::gpu::{MAX_PREFIX_SEGMENTS, PromptPrefix};
use serde::{Deserialize, Serialize};
use sim_core::rng::mix64;

/// One shared segment of a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Prefix")]
pub struct PrefixSegment {
    /// Who shares it.
    pub scope: PrefixScope,
    /// How long it is.
    pub tokens: PrefixTokens,
}

/// The requests that share a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrefixScope {
    /// Every request of the same class (from any source): a class's system prompt.
    Class,
    /// Every request of the source.
    Source,
    /// Every request of the same user: a tenant's document, a conversation.
    User,
    /// Every request with the same cache key (Zipf rank): a shared document.
    Key,
}

/// A segment's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrefixTokens {
    /// This many tokens (≥ 1).
    Fixed(u32),
    /// The request's `history_tokens` (0 without them): a conversation so far.
    History,
}

/// Checks a source's prefix list: the number of segments and their lengths; errors name
/// the field below `prefix`.
pub fn check(prefix: &[PrefixSegment]) -> Result<(), (String, String)> {
    if prefix.len() > MAX_PREFIX_SEGMENTS {
        return Err((
            String::new(),
            format!("{} segments: at most {MAX_PREFIX_SEGMENTS}", prefix.len()),
        ));
    }
    for (i, s) in prefix.iter().enumerate() {
        if s.tokens == PrefixTokens::Fixed(0) {
            return Err((format!("[{i}].tokens"), "expected Fixed(n) with n ≥ 1".into()));
        }
    }
    Ok(())
}

/// What a request is, as the scopes see it.
#[derive(Clone, Copy, Debug)]
pub struct RequestScopes {
    pub source: u16,
    /// Its sequence number in its source (names the segments it has alone).
    pub seq: u64,
    pub class: u16,
    pub user: u64,
    pub key: u64,
    pub history: u32,
}

/// Salt of segment contents ("PRFXSEGS").
const SEGMENT_SALT: u64 = 0x5052_4658_5345_4753;

/// The prefix of a request's prompt by its source's `prefix` list.
pub fn prompt_prefix(prefix: &[PrefixSegment], r: &RequestScopes) -> PromptPrefix {
    let mut out = PromptPrefix::NONE;
    for (i, s) in prefix.iter().enumerate() {
        // (scope tag, value); a missing user or key: the request's own (tag 4).
        let (tag, value) = match s.scope {
            PrefixScope::Class => (0, u64::from(r.class)),
            PrefixScope::Source => (1, u64::from(r.source)),
            PrefixScope::User if r.user != 0 => (2, r.user),
            PrefixScope::Key if r.key != 0 => (3, r.key),
            PrefixScope::User | PrefixScope::Key => (4, (u64::from(r.source) << 48) ^ r.seq),
        };
        let content = mix64(SEGMENT_SALT ^ mix64(((i as u64) << 8) | tag) ^ mix64(value));
        let tokens = match s.tokens {
            PrefixTokens::Fixed(n) => u64::from(n),
            PrefixTokens::History => u64::from(r.history),
        };
        let pushed = out.push(content, tokens);
        assert!(pushed, "checked: at most {MAX_PREFIX_SEGMENTS} segments");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(scope: PrefixScope, tokens: PrefixTokens) -> PrefixSegment {
        PrefixSegment { scope, tokens }
    }

    #[test]
    fn scopes_share_what_they_name() {
        let list = [
            seg(PrefixScope::Class, PrefixTokens::Fixed(100)),
            seg(PrefixScope::Key, PrefixTokens::Fixed(50)),
            seg(PrefixScope::User, PrefixTokens::History),
        ];
        let r = RequestScopes { source: 0, seq: 1, class: 2, user: 7, key: 9, history: 30 };
        let a = prompt_prefix(&list, &r);
        let b = prompt_prefix(&list, &RequestScopes { seq: 2, history: 40, ..r });
        let c = prompt_prefix(&list, &RequestScopes { class: 3, user: 8, key: 0, ..r });
        let (sa, sb, sc) = (a.segments(), b.segments(), c.segments());
        assert_eq!(sa.len(), 3);
        // Same class, key and user: the same contents (history lengths differ).
        assert_eq!((sa[0], sa[1]), (sb[0], sb[1]));
        assert_eq!((sa[2].0, sa[2].1, sb[2].1), (sb[2].0, 30, 40));
        // Another class, another user, no key: nothing shared.
        assert!(sa.iter().zip(sc).all(|(x, y)| x.0 != y.0));
        // A missing key is the request's own: two such requests share nothing.
        let c2 = prompt_prefix(&list, &RequestScopes { class: 3, user: 8, key: 0, seq: 5, ..r });
        assert_ne!(sc[1].0, c2.segments()[1].0);
        assert_eq!(sc[0].0, c2.segments()[0].0);
        // The same scope at another place in the list is another text.
        let twice = [seg(PrefixScope::Class, PrefixTokens::Fixed(1)); 2];
        let t = prompt_prefix(&twice, &r);
        assert_ne!(t.segments()[0].0, t.segments()[1].0);
    }

    #[test]
    fn checks_name_the_field() {
        let bad = [seg(PrefixScope::Class, PrefixTokens::Fixed(0))];
        assert_eq!(check(&bad).unwrap_err().0, "[0].tokens");
        let many = vec![seg(PrefixScope::Source, PrefixTokens::History); 9];
        assert!(check(&many).unwrap_err().1.contains("at most 8"));
        let text =
            r#"[Prefix(scope: Class, tokens: Fixed(1200)), Prefix(scope: User, tokens: History)]"#;
        let parsed: Vec<PrefixSegment> = ron::from_str(text).unwrap();
        assert_eq!(parsed[1], seg(PrefixScope::User, PrefixTokens::History));
        assert!(ron::from_str::<PrefixSegment>("Prefix(scope: Tenant, tokens: History)").is_err());
    }
}
