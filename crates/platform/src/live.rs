//! The gate on live runs that open many pull requests: a fleet
//! (`branch_fleet_nN`) or a race (`integration_race_nN`) through a live
//! driver (`harness-api` or `cli`) opens one pull request per branch and
//! run. More than [`OPT_IN_ABOVE`] branches need the explicit opt-in
//! (`--allow-large-live-run`, also spelled `--allow-large-fleet`), and no
//! invocation opens more than [`CEILING`], opted in or not. A refused run
//! skips every row with the reason and makes no request. The fake provider
//! is never gated: it touches no platform.

use crate::spec::Family;

/// The opt-in's spelling on the command line, named in the skip reason.
pub const OPT_IN_FLAG: &str = "--allow-large-live-run";

/// Above this many branches a fleet or a race on a live platform needs the
/// explicit opt-in, as in the seed's harness.
pub const OPT_IN_ABOVE: u32 = 100;

/// The most pull requests one invocation may open on a live platform
/// (branches times runs), opt-in or not.
pub const CEILING: u64 = 1000;

/// Why `family`, `runs` times, may not run on a live platform, if so: the
/// skip reason of every row (`<family>_live_ceiling_exceeded:<n>>1000` or
/// `<family>_large_live_requires_opt_in:--allow-large-live-run`). Only
/// fleets and races open pull requests by the branch; every other family
/// passes.
pub fn gate(family: Family, runs: u32, opted_in: bool) -> Option<String> {
    let n = match family {
        Family::Fleet(n) | Family::Race(n) => n,
        Family::Probe | Family::Triage(_) | Family::Anatomy => return None,
    };
    let name = family.name();
    let total = u64::from(n) * u64::from(runs);
    if total > CEILING {
        return Some(format!("{name}_live_ceiling_exceeded:{total}>{CEILING}"));
    }
    (n > OPT_IN_ABOVE && !opted_in)
        .then(|| format!("{name}_large_live_requires_opt_in:{OPT_IN_FLAG}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_fleet_above_one_hundred_needs_the_opt_in_and_never_passes_the_ceiling() {
        let fleet = Family::Fleet;
        assert_eq!(gate(fleet(100), 1, false), None);
        assert_eq!(
            gate(fleet(101), 1, false).as_deref(),
            Some("branch_fleet_large_live_requires_opt_in:--allow-large-live-run")
        );
        assert_eq!(gate(fleet(101), 1, true), None);
        assert_eq!(gate(fleet(1000), 1, true), None);
        assert_eq!(
            gate(fleet(1001), 1, true).as_deref(),
            Some("branch_fleet_live_ceiling_exceeded:1001>1000")
        );
        // The ceiling counts every run's pull requests.
        assert_eq!(
            gate(fleet(101), 10, true).as_deref(),
            Some("branch_fleet_live_ceiling_exceeded:1010>1000")
        );
        assert_eq!(
            gate(fleet(u32::MAX), 1000, false).as_deref(),
            Some("branch_fleet_live_ceiling_exceeded:4294967295000>1000")
        );
        // Two runs of one hundred are fine without the opt-in.
        assert_eq!(gate(fleet(100), 2, false), None);
    }

    #[test]
    fn a_live_race_has_the_same_opt_in_and_ceiling() {
        let race = Family::Race;
        assert_eq!(gate(race(100), 1, false), None);
        assert_eq!(
            gate(race(5000), 1, false).as_deref(),
            Some("integration_race_live_ceiling_exceeded:5000>1000")
        );
        assert_eq!(
            gate(race(5000), 1, true).as_deref(),
            Some("integration_race_live_ceiling_exceeded:5000>1000")
        );
        assert_eq!(
            gate(race(101), 1, false).as_deref(),
            Some("integration_race_large_live_requires_opt_in:--allow-large-live-run")
        );
        assert_eq!(gate(race(101), 1, true), None);
        assert_eq!(
            gate(race(334), 3, true).as_deref(),
            Some("integration_race_live_ceiling_exceeded:1002>1000")
        );
        // Small races add up over runs too.
        assert_eq!(gate(race(3), 333, false), None);
        assert_eq!(
            gate(race(3), 334, false).as_deref(),
            Some("integration_race_live_ceiling_exceeded:1002>1000")
        );
    }

    #[test]
    fn families_that_open_no_pull_request_per_branch_pass() {
        for f in [Family::Probe, Family::Anatomy, Family::Triage(5000)] {
            assert_eq!(gate(f, 1000, false), None, "{f:?}");
        }
    }
}
