//! Golden vectors for the Mann-Whitney U test.
//!
//! The expected U statistics and p-values were computed with SciPy 1.17.1,
//! `scipy.stats.mannwhitneyu(x, y, alternative=..., method=..., use_continuity=True)`,
//! with `method="exact"` for the exact rows and `method="asymptotic"` for the
//! normal-approximation rows; only the resulting numbers are kept here. The
//! larger samples were drawn once from normal distributions and rounded to
//! six decimals, so they have no ties.

use benchops::mann_whitney::{EXACT_LIMIT, Method, Used, mann_whitney, mann_whitney_with};

struct Golden {
    name: &'static str,
    x: &'static [f64],
    y: &'static [f64],
    method: Method,
    u: f64,
    p_two_sided: f64,
    p_greater: f64,
    p_less: f64,
}

/// Relative closeness. The exact p-values are ratios of exact integer counts
/// (one rounding each); the normal ones go through `erfc`, whose relative
/// accuracy is about 1e-10.
fn close(got: f64, want: f64, method: Method) -> bool {
    let rel = if method == Method::Exact { 1e-13 } else { 1e-8 };
    (got - want).abs() <= rel * want.abs()
}

const GOLDEN: &[Golden] = &[
    Golden {
        name: "exact_small (exact)",
        x: &[1.83, 0.5, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.3],
        y: &[0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.07, 3.15, 1.28],
        method: Method::Exact,
        u: 58.0,
        p_two_sided: 0.13591114767585355,
        p_greater: 0.06795557383792677,
        p_less: 0.943253805018511,
    },
    Golden {
        name: "exact_small (asymptotic)",
        x: &[1.83, 0.5, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.3],
        y: &[0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.07, 3.15, 1.28],
        method: Method::Normal,
        u: 58.0,
        p_two_sided: 0.1333202155896274,
        p_greater: 0.0666601077948137,
        p_less: 0.9440193228681258,
    },
    Golden {
        name: "exact_separated (exact)",
        x: &[10.1, 10.4, 10.2, 10.9, 10.3, 10.5, 10.8, 10.6, 10.0, 10.7],
        y: &[11.2, 11.5, 11.1, 11.9, 11.3, 11.4, 11.8, 11.6, 11.0, 11.7],
        method: Method::Exact,
        u: 0.0,
        p_two_sided: 1.082508822446903e-05,
        p_greater: 1.0,
        p_less: 5.412544112234515e-06,
    },
    Golden {
        name: "exact_separated (asymptotic)",
        x: &[10.1, 10.4, 10.2, 10.9, 10.3, 10.5, 10.8, 10.6, 10.0, 10.7],
        y: &[11.2, 11.5, 11.1, 11.9, 11.3, 11.4, 11.8, 11.6, 11.0, 11.7],
        method: Method::Normal,
        u: 0.0,
        p_two_sided: 0.00018267179110955002,
        p_greater: 0.9999325785388228,
        p_less: 9.133589555477501e-05,
    },
    Golden {
        name: "exact_unequal (exact)",
        x: &[5.5, 3.1, 4.4],
        y: &[2.0, 6.1, 7.3, 8.8, 1.2, 9.9, 4.0],
        method: Method::Exact,
        u: 8.0,
        p_two_sided: 0.6666666666666666,
        p_greater: 0.7416666666666667,
        p_less: 0.3333333333333333,
    },
    Golden {
        name: "exact_unequal (asymptotic)",
        x: &[5.5, 3.1, 4.4],
        y: &[2.0, 6.1, 7.3, 8.8, 1.2, 9.9, 4.0],
        method: Method::Normal,
        u: 8.0,
        p_two_sided: 0.648503379652976,
        p_greater: 0.7529377277953682,
        p_less: 0.324251689826488,
    },
    Golden {
        name: "exact_middle (exact)",
        x: &[1.0, 4.0, 5.0, 8.0],
        y: &[2.0, 3.0, 6.0, 7.0],
        method: Method::Exact,
        u: 8.0,
        p_two_sided: 1.0,
        p_greater: 0.5571428571428572,
        p_less: 0.5571428571428572,
    },
    Golden {
        name: "exact_middle (asymptotic)",
        x: &[1.0, 4.0, 5.0, 8.0],
        y: &[2.0, 3.0, 6.0, 7.0],
        method: Method::Normal,
        u: 8.0,
        p_two_sided: 1.0,
        p_greater: 0.5573830427633992,
        p_less: 0.5573830427633992,
    },
    Golden {
        name: "ties (asymptotic)",
        x: &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0],
        y: &[2.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 7.0, 7.0],
        method: Method::Normal,
        u: 13.5,
        p_two_sided: 0.03175895714806371,
        p_greater: 0.9876172774448116,
        p_less: 0.015879478574031856,
    },
    Golden {
        name: "large (asymptotic)",
        x: &[
            98.904492, 100.978123, 100.293103, 93.578932, 92.784102, 102.384012, 101.569374,
            94.345221, 97.669766, 99.96643, 97.059352, 108.406107, 100.635123, 101.956639,
            100.1933, 98.271641, 99.548987, 98.8159, 101.375316, 98.335485, 101.323874, 101.834289,
            102.258545, 97.660549, 100.982258, 101.991812, 96.965098, 97.710065, 97.966001,
            101.655817, 99.829134, 98.198891, 105.809838, 95.666168, 98.917574, 104.061852,
            98.843635, 99.864873, 95.774335, 93.539321, 101.12761, 99.598126, 98.586299, 98.144169,
            97.249327, 100.189168, 102.638908, 102.046322, 97.702841, 98.596071, 103.968685,
            98.176599, 102.287582, 99.024295, 100.661524, 100.09153, 99.396826, 101.164313,
            108.583933, 100.333612,
        ],
        y: &[
            100.860625, 100.236297, 99.254215, 99.058617, 100.135492, 101.969553, 98.200801,
            100.838598, 99.285749, 104.025778, 105.934939, 105.758155, 99.808955, 99.508983,
            96.748479, 100.905959, 102.765005, 102.72466, 102.805884, 107.370364, 96.922992,
            102.819999, 100.622445, 104.180185, 110.168319, 98.606963, 102.312464, 100.469932,
            102.131625, 97.242503, 103.171529, 105.794135, 104.773196, 99.556526, 95.758645,
            97.069939, 104.930405, 106.016269, 106.027321, 106.019349, 100.9754, 98.180766,
            100.74968, 102.235676, 107.084659, 101.480838, 102.070308, 100.680168, 104.164929,
            100.70429, 101.034017, 100.858779, 99.535794, 98.720828, 99.962726,
        ],
        method: Method::Normal,
        u: 1096.0,
        p_two_sided: 0.0019417171162156163,
        p_greater: 0.9990473302602575,
        p_less: 0.0009708585581078081,
    },
    Golden {
        name: "exact_near_limit (exact)",
        x: &[
            10.570656, 11.382608, 10.238854, 8.480634, 10.120163, 10.109041, 9.411995, 8.362152,
            9.92978, 8.083769, 9.832025, 9.983889, 12.438706, 11.094898, 10.890439, 10.502472,
            9.766565, 9.716863, 9.454157, 10.816087, 11.398314, 9.683733, 9.912198, 10.727223,
            11.456685, 11.528634, 12.201827, 10.726089, 10.785679, 11.272186, 9.286907, 10.843162,
            10.14357, 10.936055, 9.972885, 10.082994, 9.409086, 11.22805, 10.735453, 10.72017,
            9.230438, 10.028201, 11.271316, 11.630457, 10.931565, 9.580624, 10.88788, 11.072017,
            9.513289,
        ],
        y: &[
            10.547854, 11.171079, 11.84342, 10.758069, 9.098816, 10.34927, 11.548136, 10.411997,
            10.193916, 9.95374, 10.174965, 10.33362, 11.010257, 9.195101, 9.20034, 9.097758,
            10.94548, 10.583016, 9.756869, 11.759532, 11.72848, 11.380957, 10.813673, 8.932772,
            11.485416, 11.387855, 10.206701, 9.601607, 11.548396, 10.627978, 12.43545, 9.587774,
            10.349015, 10.434205, 10.435859, 10.381763, 10.335083, 9.961831, 7.763164, 10.701629,
            11.02033, 10.933493, 9.646656, 11.368761, 12.725326, 11.958198, 9.452662, 10.254712,
        ],
        method: Method::Exact,
        u: 1072.0,
        p_two_sided: 0.456908957569929,
        p_greater: 0.7737178287618584,
        p_less: 0.2284544787849645,
    },
    Golden {
        name: "exact_near_limit (asymptotic)",
        x: &[
            10.570656, 11.382608, 10.238854, 8.480634, 10.120163, 10.109041, 9.411995, 8.362152,
            9.92978, 8.083769, 9.832025, 9.983889, 12.438706, 11.094898, 10.890439, 10.502472,
            9.766565, 9.716863, 9.454157, 10.816087, 11.398314, 9.683733, 9.912198, 10.727223,
            11.456685, 11.528634, 12.201827, 10.726089, 10.785679, 11.272186, 9.286907, 10.843162,
            10.14357, 10.936055, 9.972885, 10.082994, 9.409086, 11.22805, 10.735453, 10.72017,
            9.230438, 10.028201, 11.271316, 11.630457, 10.931565, 9.580624, 10.88788, 11.072017,
            9.513289,
        ],
        y: &[
            10.547854, 11.171079, 11.84342, 10.758069, 9.098816, 10.34927, 11.548136, 10.411997,
            10.193916, 9.95374, 10.174965, 10.33362, 11.010257, 9.195101, 9.20034, 9.097758,
            10.94548, 10.583016, 9.756869, 11.759532, 11.72848, 11.380957, 10.813673, 8.932772,
            11.485416, 11.387855, 10.206701, 9.601607, 11.548396, 10.627978, 12.43545, 9.587774,
            10.349015, 10.434205, 10.435859, 10.381763, 10.335083, 9.961831, 7.763164, 10.701629,
            11.02033, 10.933493, 9.646656, 11.368761, 12.725326, 11.958198, 9.452662, 10.254712,
        ],
        method: Method::Normal,
        u: 1072.0,
        p_two_sided: 0.45518952055200834,
        p_greater: 0.7745774069148685,
        p_less: 0.22759476027600417,
    },
];

#[test]
fn statistic_and_p_values_match_scipy() {
    for g in GOLDEN {
        let r = mann_whitney_with(g.x, g.y, g.method).expect(g.name);
        assert_eq!(r.u, g.u, "{}: U", g.name);
        for (what, got, want) in [
            ("two-sided", r.p_two_sided, g.p_two_sided),
            ("greater", r.p_greater, g.p_greater),
            ("less", r.p_less, g.p_less),
        ] {
            assert!(
                close(got, want, g.method),
                "{}: {what} p = {got:e}, SciPy {want:e}",
                g.name
            );
        }
    }
}

#[test]
fn auto_picks_exact_only_for_small_samples_without_ties() {
    for g in GOLDEN {
        let auto = mann_whitney(g.x, g.y).expect(g.name);
        let ties = {
            let mut all: Vec<f64> = g.x.iter().chain(g.y).copied().collect();
            all.sort_by(f64::total_cmp);
            all.windows(2).any(|w| w[0] == w[1])
        };
        let want_exact = !ties && g.x.len() < EXACT_LIMIT && g.y.len() < EXACT_LIMIT;
        assert_eq!(auto.ties, ties, "{}", g.name);
        assert_eq!(matches!(auto.used, Used::Exact), want_exact, "{}", g.name);
        if (g.method == Method::Exact) == want_exact {
            assert_eq!(
                auto.p_two_sided,
                mann_whitney_with(g.x, g.y, g.method)
                    .expect(g.name)
                    .p_two_sided
            );
        }
    }
}

#[test]
fn swapping_the_samples_mirrors_the_result() {
    for g in GOLDEN {
        let a = mann_whitney_with(g.x, g.y, g.method).expect(g.name);
        let b = mann_whitney_with(g.y, g.x, g.method).expect(g.name);
        assert_eq!(a.u + b.u, (g.x.len() * g.y.len()) as f64, "{}", g.name);
        assert_eq!(a.p_two_sided, b.p_two_sided, "{}", g.name);
        assert_eq!(a.p_greater, b.p_less, "{}", g.name);
    }
}
