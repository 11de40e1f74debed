//! E-divisive change points on known series.
//!
//! Series are built from SplitMix64 with exact arithmetic only (a sum of
//! four uniforms as a bell-shaped noise), so the same numbers can be made
//! in any language. The expected change points under `Spread::Population`
//! come from Apache Otava 0.8.0 run on the same numbers,
//! `otava.analysis.compute_change_points(series, window_len=50,
//! max_pvalue=0.001, min_magnitude=0.0)`; only its output is kept here.

use benchops::changepoint::{ChangePoint, Config, Spread, change_points, weak_change_points};
use benchops::stats::SplitMix64;

fn bell(rng: &mut SplitMix64) -> f64 {
    let mut s = 0.0;
    for _ in 0..4 {
        s += (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    }
    s - 2.0
}

fn series(seed: u64, segments: &[(usize, f64)], spread: f64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for &(n, level) in segments {
        for _ in 0..n {
            out.push(level + spread * bell(&mut rng));
        }
    }
    out
}

fn cases() -> Vec<(&'static str, Vec<f64>)> {
    let mut clean = vec![1.0; 20];
    clean.extend([2.0; 20]);
    vec![
        ("clean_step", clean),
        ("step", series(1, &[(60, 100.0), (60, 110.0)], 2.0)),
        (
            "two_steps",
            series(2, &[(50, 100.0), (50, 108.0), (50, 96.0)], 2.0),
        ),
        ("no_change", series(3, &[(150, 100.0)], 2.0)),
        (
            "small_step_low_noise",
            series(4, &[(80, 100.0), (80, 103.0)], 1.0),
        ),
        (
            "regression_and_fix",
            series(5, &[(40, 100.0), (15, 120.0), (45, 100.0)], 3.0),
        ),
        (
            "long_two_steps",
            series(11, &[(300, 100.0), (300, 110.0), (400, 100.0)], 2.0),
        ),
        ("a_a_seed_111", series(111, &[(200, 100.0)], 2.0)),
    ]
}

/// Otava's output on [`cases`]: its weak change points (index, Q̂, p) from
/// `otava.analysis.split(series, 50, 0.01)`, then the indices
/// `compute_change_points` keeps.
/// One weak change point: index, Q̂ and p.
type Weak = (usize, f64, f64);

const OTAVA: &[(&str, &[Weak], &[usize])] = &[
    ("clean_step", &[(20, 20.0, 0.0)], &[20]),
    (
        "step",
        &[(60, 182.30593593737942, 2.754611824137788e-75)],
        &[60],
    ),
    (
        "two_steps",
        &[
            (50, 166.93556838544362, 6.448406813365008e-59),
            (100, 245.17468933555293, 6.4844978259763745e-71),
        ],
        &[50, 100],
    ),
    (
        "no_change",
        &[(42, 7.427660964148943, 0.23496096670537708)],
        &[],
    ),
    (
        "small_step_low_noise",
        &[(80, 54.2017157707961, 5.706214777759497e-70)],
        &[80],
    ),
    (
        "regression_and_fix",
        &[
            (40, 295.4672538128164, 8.89892377953057e-41),
            (55, 392.2949117321862, 2.8058175384239895e-44),
            (99, 6.342200750324715, 0.010343087378324779),
        ],
        &[40, 55],
    ),
    (
        "long_two_steps",
        &[
            (57, 11.131991965522456, 0.00033483343849720945),
            (300, 220.2387698610461, 1.529606772362434e-96),
            (313, 7.471774811696486, 0.00019176872743892698),
            (318, 6.187292265413808, 0.010960600909045345),
            (584, 7.141872909918816, 0.09026917360896798),
            (600, 199.4584348361121, 5.883876048546401e-125),
        ],
        &[57, 300, 313, 600],
    ),
    (
        "a_a_seed_111",
        &[
            (148, 7.201589622540657, 0.0008618084902163418),
            (152, 10.17396223128771, 0.0003800203075269553),
        ],
        &[148, 152],
    ),
];

fn rel_close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

fn population() -> Config {
    Config {
        spread: Spread::Population,
        ..Config::default()
    }
}

fn indices(points: &[ChangePoint]) -> Vec<usize> {
    points.iter().map(|c| c.index).collect()
}

#[test]
fn weak_points_reproduce_otava() {
    let all = cases();
    assert_eq!(all.len(), OTAVA.len());
    for ((name, s), (want_name, weak, _)) in all.iter().zip(OTAVA) {
        assert_eq!(name, want_name);
        let got = weak_change_points(s, &population()).expect("valid");
        assert_eq!(
            indices(&got),
            weak.iter().map(|w| w.0).collect::<Vec<_>>(),
            "{name}"
        );
        for (g, &(_, qhat, p)) in got.iter().zip(weak.iter()) {
            assert!(
                rel_close(g.qhat, qhat, 1e-9),
                "{name}: qhat {} vs {qhat}",
                g.qhat
            );
            // Deep-tail p-values through the incomplete beta function.
            assert!(
                rel_close(g.test.p, p, 1e-6),
                "{name}: p {:e} vs {p:e}",
                g.test.p
            );
        }
    }
}

#[test]
fn merged_points_reproduce_otava_except_its_stale_neighbour() {
    for ((name, s), (_, _, kept)) in cases().iter().zip(OTAVA) {
        let got = indices(&change_points(s, &population()).expect("valid"));
        if *name == "long_two_steps" {
            // Otava keeps 313 with the p-value it had while 318 still stood
            // (0.00019). After its merge drops 318 it recomputes the two
            // points after the gap, not the two beside it; tested between its
            // real neighbours (300..313 against 313..600) 313 has p = 0.0899
            // by Otava's own t-test, so it must go.
            assert_eq!(*kept, [57, 300, 313, 600]);
            assert_eq!(got, [57, 300, 600], "{name}");
        } else {
            assert_eq!(got, kept.to_vec(), "{name}");
        }
    }
    // The second point of `regression_and_fix` lost its right neighbour (99)
    // the same way, and Otava prints its stale p (2.8e-44); here it is the
    // p-value between 40 and the end, as Otava's own t-test gives it.
    let (_, s) = &cases()[5];
    let cp = change_points(s, &population()).expect("valid")[1];
    assert!(
        rel_close(cp.test.p, 5.974_622_366_871_508e-44, 1e-6),
        "{:e}",
        cp.test.p
    );
}

#[test]
fn sample_spread_finds_the_same_points_more_cautiously() {
    let population = Config {
        spread: Spread::Population,
        ..Config::default()
    };
    for (name, s) in cases() {
        let a = change_points(&s, &Config::default()).expect("valid");
        let b = change_points(&s, &population).expect("valid");
        let idx = |v: &[ChangePoint]| v.iter().map(|c| c.index).collect::<Vec<_>>();
        assert_eq!(idx(&a), idx(&b), "{name}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                x.test.p >= y.test.p,
                "{name}: {:e} < {:e}",
                x.test.p,
                y.test.p
            );
        }
    }
}

#[test]
fn known_series_give_first_principles_answers() {
    let config = Config::default();
    // A noiseless step: the split is at the first new value, the t-test is
    // decisive, and the means are the two levels.
    let mut clean = vec![5.0; 30];
    clean.extend([6.0; 30]);
    let cps = change_points(&clean, &config).expect("valid");
    assert_eq!(cps.len(), 1);
    let cp = cps[0];
    assert_eq!((cp.index, cp.test.p, cp.test.t), (30, 0.0, f64::INFINITY));
    assert_eq!((cp.test.mean_before, cp.test.mean_after), (5.0, 6.0));
    assert_eq!((cp.test.len_before, cp.test.len_after), (30, 30));
    // A constant series has nothing to split.
    assert!(
        change_points(&[3.0; 80], &config)
            .expect("valid")
            .is_empty()
    );
    // Two steps far apart in a long series: the windows slide to both, and
    // they are the two strongest points. (The series also yields a weak
    // point at 57 that survives; see `a_a_false_alarms_are_pinned`.)
    let s = series(11, &[(300, 100.0), (300, 110.0), (400, 100.0)], 2.0);
    let mut cps = change_points(&s, &config).expect("valid");
    cps.sort_by(|a, b| a.test.p.total_cmp(&b.test.p));
    let mut strongest = indices(&cps[..2]);
    strongest.sort_unstable();
    assert_eq!(strongest, [300, 600]);
    for cp in &cps[..2] {
        // Up at 300, back down at 600.
        let up = cp.test.mean_after > cp.test.mean_before;
        assert_eq!(up, cp.index == 300, "{cp:?}");
    }
}

#[test]
fn a_a_false_alarms_are_pinned() {
    // The t-test runs after the split was chosen to maximise the gap, so
    // its p-value is optimistic and `max_p` is not a false-alarm rate. On 20
    // A/A series of 200 points, one (seed 111) yields two points at
    // p < 0.001, under both spreads, as in Otava. Confirmation is what keeps
    // such points from becoming alarms; this view only annotates.
    for spread in [Spread::Sample, Spread::Population] {
        let config = Config {
            spread,
            ..Config::default()
        };
        let flagged: Vec<(u64, Vec<usize>)> = (100..120)
            .map(|seed| {
                let s = series(seed, &[(200, 100.0)], 2.0);
                (seed, indices(&change_points(&s, &config).expect("valid")))
            })
            .filter(|(_, cps)| !cps.is_empty())
            .collect();
        assert_eq!(flagged, [(111, vec![148, 152])], "{spread:?}");
    }
}

#[test]
fn magnitude_floor_drops_small_changes() {
    // A 3% step in low noise is significant; a 5% floor drops it, a 2%
    // floor keeps it.
    let s = series(4, &[(80, 100.0), (80, 103.0)], 1.0);
    let with = |min_magnitude| {
        change_points(
            &s,
            &Config {
                min_magnitude,
                ..Config::default()
            },
        )
        .expect("valid")
        .len()
    };
    assert_eq!((with(0.0), with(0.02), with(0.05)), (1, 1, 0));
}

#[test]
fn result_is_deterministic_and_ignores_affine_rescaling() {
    let s = series(2, &[(50, 100.0), (50, 108.0), (50, 96.0)], 2.0);
    let a = change_points(&s, &Config::default()).expect("valid");
    let b = change_points(&s, &Config::default()).expect("valid");
    let bits = |v: &[ChangePoint]| {
        v.iter()
            .map(|c| (c.index, c.qhat.to_bits(), c.test.p.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&a), bits(&b));
    // Milliseconds to seconds: Q̂ scales with the unit, the t-test does not.
    let scaled: Vec<f64> = s.iter().map(|v| v / 1000.0).collect();
    let c = change_points(&scaled, &Config::default()).expect("valid");
    assert_eq!(
        a.iter().map(|x| x.index).collect::<Vec<_>>(),
        c.iter().map(|x| x.index).collect::<Vec<_>>()
    );
    for (x, y) in a.iter().zip(&c) {
        assert!(rel_close(y.qhat * 1000.0, x.qhat, 1e-9));
        assert!(rel_close(y.test.p, x.test.p, 1e-6));
    }
}
