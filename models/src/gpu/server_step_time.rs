//! What a [`super::Server`] step costs, as written in scenarios: the shipped H200 fit, a
//! refit pasted from `stormglass gpu-model --fit`, or a fixed time per step.
//!
//! The key design decision: the server prices steps only through [`StepTimeSpec::step_time`],
//! so a server without token detail (a fixed step) and a fitted one run the same batching.
//!
//! Architecture invariant: every accepted spec prices a non-empty step at > 0 ns (a fixed
//! step is > 0; a fitted model has `fixed_ns` > 0 and every coefficient finite and ≥ 0), so
//! time advances with every step.
//!
//! API boundary: [`StepTimeSpec`] (serde) and its `step_time`; [`StepCoefficients`] mirrors
//! [`StepModel`]'s fields with range checks at deserialization.

use super::shipped::H200_LLAMA3_8B;
use super::step::{StepBatch, StepModel};
use serde::{Deserialize, Deserializer, Serialize, de::Error};
use sim_core::SimDuration;

/// How long a step takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum StepTimeSpec {
    /// The shipped fit: one H200, Llama-3-8B shapes, bf16 (`docs/gpu-model.md`).
    #[default]
    H200Llama3_8B,
    /// Another fit of the same model (e.g. another GPU, refitted with
    /// `stormglass gpu-model --fit FILE`).
    Fitted(StepCoefficients),
    /// Every step takes this long whatever its batch (a server without token detail), > 0.
    Fixed(#[serde(deserialize_with = "positive_duration")] SimDuration),
}

/// The coefficients of [`StepModel`] (`docs/gpu-model.md`), as written in scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "StepCoefficients")]
pub struct StepCoefficients {
    /// Once per step (weight read, launches), > 0.
    #[serde(deserialize_with = "positive")]
    pub fixed_ns: f64,
    /// Per token in the pass, ≥ 0.
    #[serde(deserialize_with = "non_negative")]
    pub token_ns: f64,
    /// Per token beyond `ridge_tokens`, ≥ 0.
    #[serde(deserialize_with = "non_negative")]
    pub compute_token_ns: f64,
    pub ridge_tokens: u64,
    /// Per cached token a decode reads, ≥ 0.
    #[serde(deserialize_with = "non_negative")]
    pub kv_token_ns: f64,
    /// Per prefill query–key pair, ≥ 0.
    #[serde(deserialize_with = "non_negative")]
    pub attention_pair_ns: f64,
}

impl From<StepCoefficients> for StepModel {
    fn from(c: StepCoefficients) -> StepModel {
        StepModel {
            fixed_ns: c.fixed_ns,
            token_ns: c.token_ns,
            compute_token_ns: c.compute_token_ns,
            ridge_tokens: c.ridge_tokens,
            kv_token_ns: c.kv_token_ns,
            attention_pair_ns: c.attention_pair_ns,
        }
    }
}

fn positive_duration<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
    let v = SimDuration::deserialize(d)?;
    if v == SimDuration::ZERO {
        return Err(D::Error::custom("expected a duration > 0, found 0"));
    }
    Ok(v)
}

fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if !(x.is_finite() && x >= 0.0) {
        return Err(D::Error::custom(format!("expected a finite number ≥ 0, found {x}")));
    }
    Ok(x)
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if !(x.is_finite() && x >= 1.0) {
        return Err(D::Error::custom(format!("expected a finite number ≥ 1 (ns), found {x}")));
    }
    Ok(x)
}

impl StepTimeSpec {
    /// The time of one step over `batch` (zero for an empty batch).
    pub fn step_time(&self, batch: &StepBatch) -> SimDuration {
        match self {
            _ if batch.is_empty() => SimDuration::ZERO,
            StepTimeSpec::Fixed(d) => *d,
            other => other.model().expect("a model").step_time(batch),
        }
    }

    /// The step model behind it, if any.
    pub fn model(&self) -> Option<StepModel> {
        match self {
            StepTimeSpec::H200Llama3_8B => Some(H200_LLAMA3_8B),
            StepTimeSpec::Fitted(c) => Some((*c).into()),
            StepTimeSpec::Fixed(_) => None,
        }
    }

    /// What deserialization guarantees, for specs built in code.
    pub fn check(&self) -> Result<(), String> {
        match self {
            StepTimeSpec::Fixed(d) if *d == SimDuration::ZERO => {
                Err("step_time: Fixed(0) would run steps in zero time".into())
            }
            StepTimeSpec::Fitted(c) if !(c.fixed_ns.is_finite() && c.fixed_ns >= 1.0) => {
                Err(format!("step_time: fixed_ns = {}: expected ≥ 1", c.fixed_ns))
            }
            other => other.model().map_or(Ok(()), |m| m.check()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_times_by_choice() {
        // 8 decodes at context 512 on the shipped fit: 4.659 + 8 · 0.014167 + 4096 · 27.667e-6
        // = 4.8859 ms (docs/gpu-model.md: "decode batch 8 context 512 … 4.886 ms").
        let batch = StepBatch::decode(8, 512);
        let h200 = StepTimeSpec::H200Llama3_8B.step_time(&batch);
        assert_eq!(h200.as_ns() / 10_000, 488);
        let text = "Fitted(StepCoefficients(fixed_ns: 4000000, token_ns: 10000, \
                    compute_token_ns: 10000, ridge_tokens: 300, kv_token_ns: 30, \
                    attention_pair_ns: 1))";
        let fitted: StepTimeSpec = ron::from_str(text).unwrap();
        assert!(fitted.check().is_ok());
        // 4 ms + 8 · 10 µs + 4096 · 30 ns = 4,202,880 ns.
        assert_eq!(fitted.step_time(&batch).as_ns(), 4_202_880);
        let fixed: StepTimeSpec = ron::from_str(r#"Fixed("7ms")"#).unwrap();
        assert_eq!(fixed.step_time(&batch), SimDuration::from_ms(7));
        assert_eq!(fixed.step_time(&StepBatch::EMPTY), SimDuration::ZERO);
        for (bad, error) in [
            (text.replace("kv_token_ns: 30", "kv_token_ns: -1"), "≥ 0"),
            (text.replace("fixed_ns: 4000000", "fixed_ns: 0"), "≥ 1"),
            (r#"Fixed("0ms")"#.to_string(), "> 0"),
        ] {
            let e = ron::from_str::<StepTimeSpec>(&bad).unwrap_err().to_string();
            assert!(e.contains(error), "{bad}: {e}");
        }
        assert!(StepTimeSpec::Fixed(SimDuration::ZERO).check().is_err());
    }
}
