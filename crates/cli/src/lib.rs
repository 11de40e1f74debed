//! What the benchops command lines share, defined once: the global output
//! options `--quiet` and `--color` ([`output`]), and the optional project
//! config file `benchops.toml` that gives defaults for `--state`,
//! `--manifest` and `--history` ([`config`]). `benchops-exec` and
//! `benchops-publish` both parse their command lines through it.

pub mod config;
pub mod output;

pub use config::{ConfigError, ProjectConfig};
pub use output::{ColorWhen, OutputArgs};

/// Parses `args` into `P` with the project config file's defaults applied
/// ([`config::apply_defaults`]): what each binary's `main_with_args`
/// calls first, with the file [`ProjectConfig::from_env`] found.
pub fn parse<P, I, T>(args: I, config: Option<&ProjectConfig>) -> Result<P, clap::Error>
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = P::command();
    if let Some(c) = config {
        cmd = config::apply_defaults(cmd, c);
    }
    let matches = cmd.try_get_matches_from_mut(args)?;
    P::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}
