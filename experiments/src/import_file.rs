//! Production configurations read as a scenario reads them: `stormglass import` (a file →
//! a RON fragment) and a scenario's `import` entries (a file's components merged into the
//! scenario's governor lists, and its `autoscalers`, at load). The translation is `models::import`'s; this module
//! reads the file, checks the translated components with the scenario's own deserializers
//! and reports every problem at the configuration's line:column under its own path.

use crate::bounded::{MAX_INPUT_BYTES, join, read_bounded};
use crate::ronfile::{InputError, Source};
use models::import::{Fragment, Options};
use models::scenario::ScenarioSpec;
use serde::de::IgnoredAny;
use std::path::Path;

/// One line per problem: `<file>:<line>:<col>: <path>: <message>`.
fn lines(path: &Path, problems: &[models::import::Problem]) -> Vec<String> {
    problems.iter().map(|p| format!("{}:{p}", path.display())).collect()
}

/// Reads and translates a configuration file; every problem as a line.
pub fn read_fragment(path: &Path, opts: &Options) -> Result<Fragment, Vec<String>> {
    let bytes = read_bounded(path, MAX_INPUT_BYTES)
        .map_err(|e| vec![format!("cannot read {}: {e}", path.display())])?;
    let text = crate::ronfile::utf8(path, bytes).map_err(|e| vec![e.to_string()])?;
    models::import::import(&text, opts).map_err(|ps| lines(path, &ps))
}

/// The fragment's components as the scenario's deserializers read them; an error in a
/// translated value is reported where the configuration set it.
pub fn check_fragment(
    path: &Path,
    frag: &Fragment,
) -> Result<ScenarioSpec<IgnoredAny>, Vec<String>> {
    let text = frag.as_scenario_text();
    Source::new(path, &text).parse::<ScenarioSpec<IgnoredAny>>().map_err(|e| {
        let line = match frag.origin(&e.field) {
            Some(o) => format!(
                "{}:{}:{}: {}: {} (as `{}`)",
                path.display(),
                o.at.line,
                o.at.col,
                o.path,
                e.message,
                e.field
            ),
            None => format!("{}: {} (in the translated `{}`)", path.display(), e.message, e.field),
        };
        vec![line]
    })
}

/// Appends `from`'s governors to `into`'s lists, refusing a name declared twice.
macro_rules! merge_lists {
    ($($(#[$m:meta])* $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? }),* $(,)?) => {
        fn merge_governors(
            into: &mut ScenarioSpec<IgnoredAny>,
            from: &mut ScenarioSpec<IgnoredAny>,
        ) -> Result<(), String> {
            $(
                for g in std::mem::take(&mut from.$list) {
                    if into.$list.iter().any(|x| x.name == g.name) {
                        return Err(format!(
                            "`{}` is declared twice in `{}` (by the scenario or an earlier \
                             import, and by this file): rename one",
                            g.name,
                            stringify!($list)
                        ));
                    }
                    into.$list.push(g);
                }
            )*
            Ok(())
        }
    };
}
models::with_governor_kinds!(merge_lists);

/// Appends `from`'s governors and autoscalers (an HPA manifest's) to `into`'s lists.
fn merge(
    into: &mut ScenarioSpec<IgnoredAny>,
    mut from: ScenarioSpec<IgnoredAny>,
) -> Result<(), String> {
    merge_governors(into, &mut from)?;
    for a in from.autoscalers {
        if into.autoscalers.iter().any(|x| x.name == a.name) {
            return Err(format!(
                "`{}` is declared twice in `autoscalers` (by the scenario or an earlier import, \
                 and by this file): rename one",
                a.name
            ));
        }
        into.autoscalers.push(a);
    }
    Ok(())
}

/// An error at the scenario's `field` whose message is `lines`, one error per line.
fn error_lines(src: &Source<'_>, field: &str, lines: Vec<String>) -> InputError {
    let mut e = src.error_at(field, lines.first().cloned().unwrap_or_default());
    let prefix = format!("\n{}:{}:{}: {}: ", e.file.display(), e.line, e.col, e.field);
    e.message = lines.join(&prefix);
    e
}

/// Resolves a scenario's `import` entries (relative to the file that names them): their
/// components join the scenario's lists, and the entries are cleared.
pub fn load_imports(
    src: &Source<'_>,
    spec: &mut ScenarioSpec<IgnoredAny>,
    prefix: &str,
) -> Result<(), InputError> {
    let dir = src.file.parent().unwrap_or(Path::new("."));
    for (i, entry) in std::mem::take(&mut spec.import).into_iter().enumerate() {
        let field = join(prefix, &format!("import[{i}]"));
        let path = dir.join(&entry.file);
        let frag =
            read_fragment(&path, &entry.options()).map_err(|l| error_lines(src, &field, l))?;
        let lists = check_fragment(&path, &frag).map_err(|l| error_lines(src, &field, l))?;
        merge(spec, lists).map_err(|m| src.error_at(&field, format!("{}: {m}", path.display())))?;
    }
    Ok(())
}

/// `stormglass import`'s options.
#[derive(clap::Args, Clone, Debug)]
pub struct ImportArgs {
    /// The configuration: Spring Boot YAML with `resilience4j.*`, Sentinel rule JSON, a
    /// gRPC service config (JSON), or a Kubernetes HorizontalPodAutoscaler (YAML/JSON).
    pub file: std::path::PathBuf,
    /// The format, when it cannot be told from the file.
    #[arg(long, value_parser = ["resilience4j", "sentinel", "grpc", "hpa"])]
    pub format: Option<String>,
    /// Import what stormglass models and list what it left out (in the fragment's header),
    /// instead of refusing the file.
    #[arg(long)]
    pub partial: bool,
    /// What Sentinel's hot-parameter `paramIdx` stands for: the call's user or key.
    #[arg(long, value_parser = ["user", "key"])]
    pub hot_param: Option<String>,
}

/// Prints the fragment (stdout) or every problem (stderr, exit code 2).
pub fn run_cli(args: &ImportArgs) -> std::process::ExitCode {
    use models::import::{Format, HotParam};
    let opts = Options {
        format: args.format.as_deref().and_then(Format::parse),
        partial: args.partial,
        hot_param: args
            .hot_param
            .as_deref()
            .map(|h| if h == "user" { HotParam::User } else { HotParam::Key }),
    };
    let checked =
        read_fragment(&args.file, &opts).and_then(|f| check_fragment(&args.file, &f).map(|_| f));
    match checked {
        Ok(frag) => {
            let n: usize = frag.names().iter().map(|(_, v)| v.len()).sum();
            let format = frag.format.map_or("", |f| f.name());
            let s = if n == 1 { "" } else { "s" };
            println!("// stormglass import {} ({format}): {n} component{s}", args.file.display());
            print!("{}", frag.to_ron());
            std::process::ExitCode::SUCCESS
        }
        Err(lines) => {
            for l in lines {
                eprintln!("{l}");
            }
            std::process::ExitCode::from(2)
        }
    }
}
