//! The global output options of the command lines, and the one place that
//! decides whether to print notes and colour.
//!
//! - `--quiet` (`-q`): only errors and the command's result; no notes on
//!   standard error, no progress bar.
//! - `--color auto|always|never`: `auto` (the default) colours a stream
//!   only when it is a terminal and `NO_COLOR` is unset or empty (and
//!   honours `CLICOLOR=0` and `CLICOLOR_FORCE`, as clap does); `always`
//!   and `never` override the environment.
//!
//! Colour is restrained: verdict words and the `error:` prefix, nothing
//! else. Text is painted with [`paint`] and written through [`stdout`] and
//! [`stderr`], which drop the escapes where colour is off. Machine output
//! (`--json`, `--format json`) is never painted, so `--color` cannot change
//! it.

use std::sync::atomic::{AtomicBool, Ordering};

use anstyle::{AnsiColor, Style};

/// When to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always, whatever the environment says.
    Always,
    /// Never.
    Never,
}

/// The global output options, flattened into each binary's top-level
/// arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Print only errors and the command's result: no notes, no progress
    /// bar.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// When to colour the output: auto (when the stream is a terminal and
    /// NO_COLOR is unset or empty), always, never. JSON output is never
    /// coloured.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: ColorWhen,
}

static QUIET: AtomicBool = AtomicBool::new(false);

impl OutputArgs {
    /// Makes these options the process's: [`quiet`] and the colour choice
    /// of [`stdout`] and [`stderr`].
    pub fn apply(&self) {
        QUIET.store(self.quiet, Ordering::Relaxed);
        anstream::ColorChoice::write_global(match self.color {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        });
    }
}

/// Whether `--quiet` was given: notes and progress bars stay silent.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Standard output, dropping colour where it is off.
pub fn stdout() -> anstream::Stdout {
    anstream::stdout()
}

/// Standard error, dropping colour where it is off.
pub fn stderr() -> anstream::Stderr {
    anstream::stderr()
}

/// Whether standard error shows colour now (for a progress bar, which
/// draws on its own).
pub fn stderr_colored() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// No style: a verdict that needs no eye (within the band, the same).
pub const PLAIN: Style = Style::new();
/// The style of bad news: a regression, a failure, `error:`.
pub const BAD: Style = AnsiColor::Red.on_default().bold();
/// The style of good news: faster, an improvement, cleared.
pub const GOOD: Style = AnsiColor::Green.on_default();
/// The style of an open question: inconclusive, not compared, a suspect.
pub const UNSURE: Style = AnsiColor::Yellow.on_default();

/// `text` in `style` (the escapes are dropped on output where colour is
/// off).
pub fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// The `error:` prefix of an error line, painted.
pub fn error_prefix() -> String {
    paint(BAD, "error:")
}

/// `text` with its leading `error:`, if any, painted.
pub fn paint_error_prefix(text: &str) -> String {
    match text.strip_prefix("error:") {
        Some(rest) => format!("{}{rest}", error_prefix()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn painted_text_is_as_wide_as_the_text() {
        let p = paint(BAD, "slower");
        assert_ne!(p, "slower");
        assert!(p.contains("slower"));
        assert_eq!(benchops::units::visible_width(&p), 6);
    }

    #[test]
    fn stripping_leaves_the_plain_text() {
        let mut out = anstream::StripStream::new(Vec::new());
        std::io::Write::write_all(&mut out, paint(GOOD, "faster").as_bytes()).expect("write");
        assert_eq!(out.into_inner(), b"faster");
    }
}
