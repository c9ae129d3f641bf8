//! Every named scenario runs (shortened to 2 s of virtual time), reports one row per run, and
//! its JSON and SVG come out well-formed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use udt_lab::scenario::{self, Params, SCENARIOS};
use udt_sim::rng::seed_from_env;

#[test]
fn every_scenario_runs_and_reports() {
    let seed = seed_from_env(1);
    for s in SCENARIOS {
        let params = Params { time_s: Some(2.0), warmup_s: Some(0.5), seed, ..Params::default() };
        let report = scenario::run(s.name, &params).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name));
        assert!(!report.runs.is_empty(), "{}: no runs", s.name);
        assert!(report.table().contains(s.name));
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        let run = &json["runs"][0];
        for key in ["utilization", "efficiency_mbps", "fairness", "stability", "loss_rate"] {
            assert!(run[key].is_number(), "{}: {key} missing from the JSON", s.name);
        }
        assert!(run["flows"][0]["mean_mbps"].is_number(), "{}", s.name);
        assert!(run["params"]["bw_mbps"].is_number(), "{}", s.name);
        for r in &report.runs {
            let m = &r.measures;
            for v in [m.efficiency_mbps, m.utilization, m.fairness, m.stability, m.loss_rate] {
                assert!(v.is_finite() && v >= 0.0, "{} {}: {m:?}", s.name, r.label);
            }
        }
    }
}

#[test]
fn friendliness_is_reported_when_tcp_takes_part() {
    let params = Params {
        time_s: Some(3.0),
        warmup_s: Some(1.0),
        bw_mbps: Some(10.0),
        rtt_ms: Some(10.0),
        ..Params::default()
    };
    let report = scenario::run("fig4-11", &params).unwrap();
    assert_eq!(report.runs.len(), 2);
    assert!(report.runs[0].measures.friendliness.is_some_and(|t| t > 0.0));
    assert!(report.runs[1].measures.friendliness.is_none());
}

#[test]
fn unknown_names_and_parameters_are_refused() {
    assert!(scenario::run("fig9-9", &Params::default()).is_err());
    let mut p = Params::default();
    assert!(p.set("bw", "-1").is_err());
    assert!(p.set("loss", "1.5").is_err());
    assert!(p.set("colour", "red").is_err());
    assert!(p.set("cc", "udt+noisy").is_err(), "the simulator's former private names are gone");
    assert!(p.set("cc", "daimd:noisy=true").is_ok());
    assert!(p.set("cc", "newreno:ack=1").is_ok());
}

#[test]
fn plots_are_written() {
    let params = Params { time_s: Some(2.0), ..Params::default() };
    let report = scenario::run("custom", &params).unwrap();
    let path = std::env::temp_dir().join(format!("udt-lab-plot-{}.svg", std::process::id()));
    udt_lab::plot::svg(&report, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(svg.starts_with("<svg") && svg.contains("polyline"), "not an SVG line plot");
}

#[test]
fn reverse_loss_reaches_the_way_back_only() {
    use udt_lab::scenario::DumbbellRun;
    use udt_sim::flow::CcChoice;
    use udt_sim::link::LossModel;
    let mut p = Params::default();
    assert!(p.set("reverse-loss", "1.5").is_err());
    p.set("reverse-loss", "0.05").unwrap();
    let base =
        DumbbellRun::uniform("t", 10_000_000, std::time::Duration::from_millis(10), 1, CcChoice::default());
    let r = base.clone().with_params(&p);
    assert_eq!(r.reverse_loss, LossModel::Bernoulli(0.05));
    assert_eq!(r.loss, LossModel::None, "the data direction keeps its own loss");
    p.set("burst", "4").unwrap();
    assert!(matches!(base.with_params(&p).reverse_loss, LossModel::GilbertElliott(_)));
    // A transfer over a lossy way back still completes its run and moves data.
    let params = Params {
        time_s: Some(3.0),
        warmup_s: Some(1.0),
        bw_mbps: Some(10.0),
        rtt_ms: Some(20.0),
        reverse_loss: Some(0.05),
        ..Params::default()
    };
    let report = scenario::run("custom", &params).unwrap();
    assert!(report.runs[0].measures.utilization > 0.5, "{:?}", report.runs[0].measures);
}

/// `jitter` reaches the bottleneck's delay: it is reported with the run and moves the trace
/// (the same seed without it differs); a negative one is refused.
#[test]
fn jitter_applies_to_the_dumbbell_and_is_reported() {
    let run = |jitter: Option<f64>| {
        let params = Params {
            time_s: Some(3.0),
            warmup_s: Some(1.0),
            bw_mbps: Some(20.0),
            rtt_ms: Some(40.0),
            flows: Some(1),
            jitter_ms: jitter,
            ..Params::default()
        };
        let report = scenario::run("custom", &params).unwrap();
        serde_json::from_str::<serde_json::Value>(&report.to_json()).unwrap()["runs"][0].clone()
    };
    let (plain, jittered) = (run(None), run(Some(2.0)));
    assert!(plain["params"].get("jitter_ms").is_none(), "{}", plain["params"]);
    assert_eq!(jittered["params"]["jitter_ms"], 2.0);
    assert_ne!(plain["trace_hash"], jittered["trace_hash"], "the jitter changed nothing");
    assert!(jittered["efficiency_mbps"].as_f64().unwrap() > 0.0);
    let mut p = Params::default();
    assert!(p.set("jitter", "-1").is_err());
    assert!(p.set("jitter", "1.5").is_ok());
    assert_eq!(p.jitter_ms, Some(1.5));
}
