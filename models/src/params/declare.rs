//! The two table macros of the registry: `param_choices!` (an enum parameter's choices, declared
//! once) and `declare_params!` (a kind's parameter rows, from which its `Params`, defaults,
//! ranged parsers and its run-time state's `ApplyParam` are generated).

/// Declares an enum whose value can be a parameter, each variant's scenario name written
/// once: the enum with its serde names (`#[serde(rename = …)]`), [`ParamChoice`](super::ParamChoice), an
/// inherent `CHOICES` (for `Enum { choices: Foo::CHOICES }` in a [`declare_params!`] row)
/// and [`ParamField`](super::ParamField).
///
/// ```text
/// param_choices! {
///     /// `transitionToStateAfterWaitDuration`.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
///     pub enum StateAfterMaxWait { Open = "OPEN", Closed = "CLOSED" }
/// }
/// ```
macro_rules! param_choices {
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vm:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        $vis enum $name {
            $( $(#[$vm])* #[serde(rename = $text)] $variant, )+
        }
        impl $name {
            /// The scenario names of the choices, in declaration order.
            pub const CHOICES: &'static [&'static str] = &[$($text),+];
        }
        impl $crate::params::ParamChoice for $name {
            const CHOICES: &'static [&'static str] = &[$($text),+];
            fn choice(&self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
            fn from_choice(name: &str) -> Option<Self> {
                match name {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }
        impl $crate::params::ParamField for $name {
            fn to_value(&self) -> $crate::params::ParamValue {
                $crate::params::ParamValue::Enum(
                    $crate::params::ParamChoice::choice(self).to_string(),
                )
            }
            fn from_value(v: $crate::params::ParamValue) -> Option<Self> {
                match v {
                    $crate::params::ParamValue::Enum(c) => {
                        $crate::params::ParamChoice::from_choice(&c)
                    }
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use param_choices;

/// One declaration per parameter: a component's [`Params`](super::Params) implementation (its kind, its
/// declarations, `get` and `set`) generated from one table, a row per parameter stating its
/// name, type and range, unit, run-time flag and doc once, next to how it is read and
/// written. The registry, validation, sweeps, the timeline, `explain`, the GUI's knobs and
/// the generated reference tables all read these rows.
///
/// ```text
/// declare_params! {
///     AimdLimitSpec: "aimd_limit", name = |s| s.name, state = Aimd;
///     initial_limit: Count { min: 1, max: MAX_LIMIT }, "calls", fixed,
///         "the limit before the first sample (initialLimit)";
///     // A run-time parameter names its setter on the state:
///     min_limit: Count { min: 1, max: MAX_LIMIT }, "calls",
///         runtime(apply = |a, n| a.min_limit = n), "the lowest limit (minLimit)";
///     // A parameter held elsewhere than a field of the same name:
///     wait_duration: Duration { .. }, "ns", fixed, "the (first) backoff interval",
///         get = |s| s.backoff.wait_duration(), set = |s, d| s.backoff.set_wait_duration(d);
/// }
/// ```
/// Rows are `name: <ParamType variant>, unit, <run-time flag>, doc` and optionally
/// `default = <value>` (the `ParamValue` variant's content, a choice's name for an enum:
/// the field's serde default through [`Defaults`](super::Defaults), and the reference table's default),
/// `get = |s| <value>` (a [`ParamField`](super::ParamField); `opt_get` for an `Option` of one, the parameter
/// then absent from instances that return `None`) and `set = |s, v| <statement>`; without
/// them the field of the same name is read and written; `field = "trace.rate_scale"` (last)
/// names the field path that holds a parameter not written as a field of its own name
/// (error messages: [`Params::field_of`](super::Params::field_of)). `check = <fn(&Spec) -> Result<(), String>>` after it
/// checks the whole spec after each `set` (a cross-field rule), which is undone if refused.
/// `scenario_only = [field: "why", …]` after the kind names the declaration's fields that
/// are set in the scenario only, each with the reason it is not a parameter (a reference, a
/// structure valid only as a whole): [`Params::SCENARIO_ONLY`](super::Params::SCENARIO_ONLY),
/// listed in the generated reference, and every other written field must be a row's
/// ([`fields::unregistered_fields`](super::fields::unregistered_fields)).
/// An enum parameter's row is `Enum { choices: Foo::CHOICES }` with `Foo` declared by
/// [`param_choices!`].
///
/// The run-time flag is `fixed` (read when the run starts), `runtime(apply = |st, x| …)` or
/// `runtime(apply = |st, x, now| …)` (a change during the run: `st` the component's
/// run-time state, `x` the value as the setter's argument type, `now` the instant; the
/// setter returns `()` or `Result<(), String>`, an `Err` refusing the change, e.g. a
/// cross-field rule); a bare `runtime` does not compile (every run-time parameter names
/// its setter). `state = <type>` after the kind (`, generics = [T:
/// Copy]` for a generic one) names the state whose [`ApplyParam`](super::ApplyParam) the
/// `apply` rows generate: the parameter's name is written once, in its row; `apply` on a
/// `fixed` row does not compile. A component whose run-time state the world owns (a
/// source's traffic, a call site, an app's instances) names a trait of setters declared
/// beside its rows instead, `state = dyn FooSetters + '_` (the schema names no runtime
/// type; e.g. `source::SourceSetters`): the world implements it with what the follow-ups
/// need (the engine context: reschedule an arrival, start users) and hands the change over
/// by kind only.
///
/// `declare_params! { rows FlowRule: "flow rule", state = RuleState; <rows> }` declares the rows of a part that
/// has no path of its own ([`ParamRows`](super::ParamRows)): its component lists them under indexed names
/// (`flow.<name>.rule<i>.count`, [`indexed_decls`](super::indexed_decls), [`split_indexed`](super::split_indexed)),
/// declared with `parts = RULE => rules[FlowRule; MAX_RULES]` after the kind (the prefix, the
/// field holding the parts, their type and how many at most). An optional part held in an
/// `Option` field is declared with `part = thread_overhead[ThreadOverheadSpec]` (the field
/// and the part's type): its rows are listed as `<field>.<row>` where the part is present
/// (`app.<name>.thread_overhead.cpu_cores`, [`part_decls`](super::part_decls)).
macro_rules! declare_params {
    // A part declared with its own rows (a flow rule of `flow.<name>`): [`ParamRows`](super::ParamRows),
    // listed by its component under indexed names ([`indexed_decls`](super::indexed_decls)).
    (rows $spec:ty : $label:literal $(, state = $state:ty)?; $($rows:tt)*) => {
        $crate::params::declare_params!(@rows $spec, $label, [$($state)?]; $($rows)*);
    };
    (@rows $spec:ty, $label:literal, [$($state:tt)*];
        $(
            $param:ident : $variant:ident $({ $($range:tt)* })?, $unit:literal,
            $rt:ident $(( apply = |$as:ident, $av:ident $(: $avt:ty)? $(, $an:ident)?| $apply:expr ))?,
            $doc:literal
            $(, default = $default:expr)?
            $(, get = |$gs:ident| $get:expr)?
            $(, opt_get = |$os:ident| $opt_get:expr)?
            $(, set = |$ss:ident, $sv:ident| $set:expr)?
            $(, field = $field:literal)?
        );* $(;)?
    ) => {
        $( $crate::params::declare_params!(@needs_setter $rt $(, $as)?); )*
        $crate::params::declare_params!(@state [$($state)*], $label;
            $( ($param, $rt $(, |$as, $av $(: $avt)? $(, $an)?| $apply)?) )*
        );
        #[allow(dead_code)]
        impl $crate::params::Defaults<$spec> {
            $($(
                /// The declared default (its `declare_params!` row).
                pub fn $param<T: $crate::params::ParamField>() -> T {
                    T::from_value($crate::params::declare_params!(@value $variant, $default))
                        .expect("a declared default has its field's type")
                }
            )?)*
        }
        #[allow(dead_code)]
        impl $crate::params::Ranged<$spec> {
            $(
                /// Parses the field with its row's type and range (`declare_params!`).
                pub fn $param<'de, De: serde::Deserializer<'de>, T: $crate::params::ParamField>(
                    d: De,
                ) -> Result<T, De::Error> {
                    $crate::params::deserialize_ranged(
                        $crate::params::ParamType::$variant $({ $($range)* })?,
                        d,
                    )
                }
            )*
        }
        #[allow(dead_code)]
        impl $crate::params::RangedSome<$spec> {
            $(
                /// Parses a present value with its row's type and range (`declare_params!`).
                pub fn $param<'de, De: serde::Deserializer<'de>, T: $crate::params::ParamField>(
                    d: De,
                ) -> Result<Option<T>, De::Error> {
                    $crate::params::deserialize_ranged_some(
                        $crate::params::ParamType::$variant $({ $($range)* })?,
                        d,
                    )
                }
            )*
        }
        #[allow(dead_code)]
        impl $crate::params::RangedOpt<$spec> {
            $(
                /// Parses `None` or `Some(v)`, v with its row's type and range.
                pub fn $param<'de, De: serde::Deserializer<'de>, T: $crate::params::ParamField>(
                    d: De,
                ) -> Result<Option<T>, De::Error> {
                    $crate::params::deserialize_ranged_opt(
                        $crate::params::ParamType::$variant $({ $($range)* })?,
                        d,
                    )
                }
            )*
        }
        impl $crate::params::ParamRows for $spec {
            fn row_decls() -> Vec<$crate::params::ParamDecl> {
                vec![$($crate::params::ParamDecl {
                    name: stringify!($param),
                    ty: $crate::params::ParamType::$variant $({ $($range)* })?,
                    unit: $unit,
                    runtime: $crate::params::declare_params!(@runtime $rt),
                    doc: $doc,
                    default: $crate::params::declare_params!(@default $variant $(, $default)?),
                }),*]
            }
            #[allow(unused_variables)]
            fn row_field(p: &str) -> Option<&'static str> {
                match p {
                    $(stringify!($param) => $crate::params::declare_params!(@field $($field)?),)*
                    _ => None,
                }
            }
            // (A kind with parts only, no rows of its own, matches nothing here.)
            #[allow(unused_variables, unused_imports)]
            fn row_get(&self, p: &str) -> Option<$crate::params::ParamValue> {
                use $crate::params::ParamField as _;
                match p {
                    $(stringify!($param) => $crate::params::declare_params!(
                        @get self, $param $(, |$gs| $get)? $(, opt |$os| $opt_get)?
                    ),)*
                    _ => None,
                }
            }
            #[allow(unused_variables, unused_imports, unreachable_code)]
            fn row_set(&mut self, p: &str, v: $crate::params::ParamValue) -> Result<(), String> {
                use $crate::params::ParamField;
                let wrong = |p: &str, v: &$crate::params::ParamValue| {
                    format!("{} has no parameter `{p}` of type {v:?}", $label)
                };
                match p {
                    $(stringify!($param) => {
                        let Some(x) = ParamField::from_value(v.clone()) else {
                            return Err(wrong(p, &v));
                        };
                        $crate::params::declare_params!(
                            @set self, x, $param $(, |$ss, $sv| $set)?
                        );
                    })*
                    _ => return Err(wrong(p, &v)),
                }
                Ok(())
            }
        }
    };
    // The run-time state's [`ApplyParam`](super::ApplyParam), from the rows that name a setter.
    (@state [], $label:literal; $($rows:tt)*) => {};
    (@state [$state:ty $(, [$($gen:tt)*])?], $label:literal;
        $( ($param:ident, $rt:ident $(, |$as:ident, $av:ident $(: $avt:ty)? $(, $an:ident)?| $apply:expr)?) )*
    ) => {
        impl<$($($gen)*)?> $crate::params::ApplyParam for $state {
            #[allow(unused_variables)]
            fn apply_param(
                &mut self,
                p: &str,
                v: $crate::params::ParamValue,
                now: sim_core::SimTime,
            ) -> Result<(), String> {
                match p {
                    $($(
                        stringify!($param) => {
                            $crate::params::declare_params!(@applied $rt);
                            let Some(x) = $crate::params::ParamField::from_value(v.clone()) else {
                                return Err(format!("{}.{p}: {v} is not of its type", $label));
                            };
                            let $as = &mut *self;
                            let $av $(: $avt)? = x;
                            $(let $an = now;)?
                            $crate::params::Applied::applied($apply)
                        }
                    )?)*
                    _ => Err(format!("{}.{p} = {v} is not run-time changeable", $label)),
                }
            }
        }
    };
    (@needs_setter fixed) => {};
    (@needs_setter runtime, $as:ident) => {};
    (@needs_setter runtime) => {
        compile_error!("a run-time parameter names its setter: `runtime(apply = |st, x| …)`");
    };
    (@applied runtime) => {};
    (@applied fixed) => {
        compile_error!("a `fixed` parameter has no run-time setter (`runtime(apply = …)`)")
    };
    (@default $variant:ident) => { None };
    (@default $variant:ident, $d:expr) => {
        Some($crate::params::declare_params!(@value $variant, $d))
    };
    (@value Enum, $d:expr) => { $crate::params::ParamValue::Enum(String::from($d)) };
    (@value List, $d:expr) => { $crate::params::ParamField::to_value(&$d) };
    (@value FloatAbove, $d:expr) => { $crate::params::ParamValue::Float($d) };
    (@value $variant:ident, $d:expr) => { $crate::params::ParamValue::$variant($d) };
    (@field) => { None };
    (@field $f:literal) => { Some($f) };
    (@runtime runtime) => { true };
    (@runtime fixed) => { false };
    (@get $self:ident, $param:ident) => { Some($self.$param.to_value()) };
    (@get $self:ident, $param:ident, |$gs:ident| $get:expr) => {{
        let $gs = $self;
        Some(($get).to_value())
    }};
    (@get $self:ident, $param:ident, opt |$os:ident| $get:expr) => {{
        let $os = $self;
        ($get).map(|x| x.to_value())
    }};
    (@set $self:ident, $x:ident, $param:ident) => { $self.$param = $x };
    (@set $self:ident, $x:ident, $param:ident, |$ss:ident, $sv:ident| $set:expr) => {{
        let ($ss, $sv) = ($self, $x);
        $set;
    }};
    // A component kind: its rows ([`ParamRows`](super::ParamRows)) and [`Params`](super::Params) over them,
    // with the indexed rows of its parts (`parts = RULE => rules[FlowRule; MAX_RULES]`).
    (
        $spec:ty : $kind:literal, name = |$ns:ident| $name:expr
        $(, check = $check:expr)?
        $(, parts = $prefix:expr => $parts:ident [$part:ty; $max:expr])?
        $(, part = $opt:ident [$opt_ty:ty])?
        $(, scenario_only = [$($so_field:ident: $so_why:literal),* $(,)?])?
        $(, state = $state:ty $(, generics = [$($gen:tt)*])?)? ;
        $($rows:tt)*
    ) => {
        $crate::params::declare_params!(
            @rows $spec, $kind, [$($state $(, [$($gen)*])?)?]; $($rows)*
        );
        impl $crate::params::Params for $spec {
            const KIND: &'static str = $kind;
            $(const SCENARIO_ONLY: &'static [(&'static str, &'static str)] =
                &[$((stringify!($so_field), $so_why)),*];)?
            fn instance_name(&self) -> &str {
                let $ns = self;
                &$name
            }
            fn decls() -> Vec<$crate::params::ParamDecl> {
                #[allow(unused_mut)]
                let mut v = <$spec as $crate::params::ParamRows>::row_decls();
                $(
                    static PARTS: std::sync::OnceLock<Vec<$crate::params::ParamDecl>> =
                        std::sync::OnceLock::new();
                    v.extend($crate::params::indexed_decls(
                        $prefix,
                        $max,
                        <$part as $crate::params::ParamRows>::row_decls,
                        &PARTS,
                    ));
                )?
                $(
                    static PART: std::sync::OnceLock<Vec<$crate::params::ParamDecl>> =
                        std::sync::OnceLock::new();
                    v.extend($crate::params::part_decls(
                        stringify!($opt),
                        <$opt_ty as $crate::params::ParamRows>::row_decls,
                        &PART,
                    ));
                )?
                v
            }
            #[allow(unused_variables)]
            fn field_of(param: &str) -> String {
                $(if let Some((i, f)) = $crate::params::split_indexed($prefix, param) {
                    let f = <$part as $crate::params::ParamRows>::row_field(f).unwrap_or(f);
                    return format!("{}[{i}].{f}", stringify!($parts));
                })?
                $(if let Some(f) = param.strip_prefix(concat!(stringify!($opt), ".")) {
                    let f = <$opt_ty as $crate::params::ParamRows>::row_field(f).unwrap_or(f);
                    return format!("{}.{f}", stringify!($opt));
                })?
                match <$spec as $crate::params::ParamRows>::row_field(param) {
                    Some(f) => f.to_string(),
                    None => param.to_string(),
                }
            }
            fn get(&self, p: &str) -> Option<$crate::params::ParamValue> {
                $(if let Some((i, f)) = $crate::params::split_indexed($prefix, p) {
                    return $crate::params::ParamRows::row_get(self.$parts.get(i)?, f);
                })?
                $(if let Some(f) = p.strip_prefix(concat!(stringify!($opt), ".")) {
                    return $crate::params::ParamRows::row_get(self.$opt.as_ref()?, f);
                })?
                $crate::params::ParamRows::row_get(self, p)
            }
            fn set(&mut self, p: &str, v: $crate::params::ParamValue) -> Result<(), String> {
                fn one(s: &mut $spec, p: &str, v: $crate::params::ParamValue) -> Result<(), String> {
                    $(if let Some((i, f)) = $crate::params::split_indexed($prefix, p) {
                        let part = s.$parts.get_mut(i);
                        let part = part.ok_or_else(|| format!("{} has no parameter `{p}`", $kind))?;
                        return $crate::params::ParamRows::row_set(part, f, v);
                    })?
                    $(if let Some(f) = p.strip_prefix(concat!(stringify!($opt), ".")) {
                        let part = s.$opt.as_mut();
                        let part = part.ok_or_else(|| format!("{} has no `{}`", $kind, stringify!($opt)))?;
                        return $crate::params::ParamRows::row_set(part, f, v);
                    })?
                    $crate::params::ParamRows::row_set(s, p, v)
                }
                $(let (before, check) = (self.clone(), $check);)?
                one(self, p, v)?;
                $(if let Err(e) = check(&*self) {
                    let _ = stringify!($check);
                    *self = before;
                    return Err(e);
                })?
                Ok(())
            }
        }
    };
}
pub(crate) use declare_params;
