//! The GitHub client settings every publisher test against the simulator
//! uses: the simulator's URL, one manual clock for JWT claims, pacing and
//! retry sleeps, a short request timeout and a fixed jitter seed.

use std::sync::Arc;
use std::time::Duration;

use benchops_github::ManualClock;
use benchops_publish::github::ClientSettings;
use benchops_testkit::GitHubSim;

/// Client settings for `sim`, with `clock` as both clock and sleeper.
pub fn sim_client(sim: &GitHubSim, clock: &ManualClock) -> ClientSettings {
    ClientSettings {
        api_url: Some(sim.base_url()),
        clock: Some(Arc::new(clock.clone())),
        sleeper: Some(Arc::new(clock.clone())),
        timeout: Some(Duration::from_secs(5)),
        jitter_seed: Some(7),
        ..ClientSettings::default()
    }
}
