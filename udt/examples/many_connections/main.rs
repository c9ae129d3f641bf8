//! Many connections on one listener port: a listener (a child process, so that its CPU time and
//! resident memory are its own) accepts N connections, all opened by this process from ONE
//! local UDP port; each sends a 64-byte message every `--interval` seconds for `--seconds`
//! (interval 0: one message as it connects, then idle). The listener checks that every message
//! arrives intact and in order, per connection. Printed: connections opened and accepted,
//! messages expected and received, connections that missed one (starved), delivery latency,
//! the listener's resident memory (baseline, peak `VmHWM`, final `VmRSS`, and per connection)
//! and both processes' CPU seconds over the sending window. Loopback only.
//!
//! ```sh
//! cargo run --release -p udt-net --features tokio --example many_connections -- \
//!     [--connections N] [--interval SECS] [--seconds SECS] [--threads T] [--json]
//! ```
//!
//! Defaults: 10,000 connections, a message every 1 s, 10 s, 4 client threads (the connections
//! are tasks on that many threads). `--json` prints
//! one JSON line instead of the summary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod latency;
mod procfs;
mod server;
mod wire;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use udt::Options;

/// Set in the child: run as the listener; holds "CONNECTIONS SECONDS".
const SERVER_ENV: &str = "UDT_MANY_CONNECTIONS_SERVER";

/// Command-line settings.
#[derive(Debug, Clone)]
struct Args {
    connections: u32,
    interval: Duration,
    seconds: Duration,
    threads: u32,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        connections: 10_000,
        interval: Duration::from_secs(1),
        seconds: Duration::from_secs(10),
        threads: 4,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--json" {
            a.json = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let secs = |v: &str| -> Result<Duration, String> {
            let s: f64 = v.parse().map_err(|_| format!("{flag}: `{v}` is not a number"))?;
            Duration::try_from_secs_f64(s).map_err(|_| format!("{flag}: `{v}` is out of range"))
        };
        match flag.as_str() {
            "--connections" => {
                a.connections = value.parse().map_err(|_| format!("bad --connections {value}"))?
            }
            "--interval" => a.interval = secs(&value)?,
            "--seconds" => a.seconds = secs(&value)?,
            "--threads" => a.threads = value.parse().map_err(|_| format!("bad --threads {value}"))?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if a.connections == 0 || a.threads == 0 || a.seconds > Duration::from_secs(86_400) {
        return Err("--connections and --threads must be above 0, --seconds at most a day".into());
    }
    a.threads = a.threads.min(a.connections);
    Ok(a)
}

/// The listener child and its pipes.
struct Listener {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Listener {
    fn spawn(a: &Args) -> Listener {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(SERVER_ENV, format!("{} {}", a.connections, a.seconds.as_secs_f64()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the listener");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Listener { child, stdin, stdout }
    }

    /// The words after `word` on the child's next line that starts with it.
    fn expect(&mut self, word: &str) -> Vec<String> {
        // Bounded by the child's own deadlines: it prints every line, or exits (EOF).
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the listener exited before `{word}`");
            let mut words = line.split_whitespace();
            if words.next() == Some(word) {
                return words.map(str::to_string).collect();
            }
        }
    }

    fn tell(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn cpu(&self) -> f64 {
        procfs::cpu_seconds(self.child.id())
    }
}

fn main() {
    if let Ok(spec) = std::env::var(SERVER_ENV) {
        let (n, secs) = spec.split_once(' ').expect("CONNECTIONS SECONDS");
        server::run(n.parse().unwrap(), secs.parse().unwrap());
        return;
    }
    let a = parse_args().unwrap_or_else(|e| {
        eprintln!("many_connections: {e}");
        std::process::exit(2);
    });
    let mut listener = Listener::spawn(&a);
    let port: u16 = listener.expect("port")[0].parse().unwrap();
    let server = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let options = Options {
        write_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(10)),
        ..Options::default()
    };
    // All connections on the process's shared client port: one UDP socket, one I/O thread.
    let rt = client::runtime(a.threads);
    let me = std::process::id();
    let (connect_start, server_cpu0, client_cpu0) = (Instant::now(), listener.cpu(), procfs::cpu_seconds(me));
    let mut connected = client::connect_all(&rt, server, a.connections, &options);
    let opened = connected.conns.len();
    listener.tell(&format!("connected {opened}"));
    let accepted = listener.expect("accepted");
    let connect_s = connect_start.elapsed().as_secs_f64();
    let (server_cpu1, client_cpu1) = (listener.cpu(), procfs::cpu_seconds(me));

    let t0 = Instant::now();
    client::send_all(&rt, &mut connected.conns, a.connections, t0, a.interval, a.seconds);
    let window = t0.elapsed().as_secs_f64();
    let (server_cpu2, client_cpu2) = (listener.cpu(), procfs::cpu_seconds(me));
    let sent = client::totals(&connected.conns);
    let drops = |port| procfs::udp_drops(port).map_or(f64::NAN, |d| d as f64);
    let (server_drops, client_drops) = (drops(port), client::port(&connected.conns).map_or(f64::NAN, drops));
    client::send_ends(&rt, &mut connected.conns);
    listener.tell("ended");
    let report: HashMap<String, String> = listener
        .expect("report")
        .into_iter()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let conns = connected.conns.iter();
    let expected: u64 = conns.clone().map(|c| u64::from(c.sent)).sum();
    let write_errors = conns.clone().filter(|c| c.error.is_some()).count();
    let (_, client_peak) = procfs::resident_bytes(me);
    drop(connected.conns);
    drop(listener.stdin);
    let _ = listener.child.wait();

    let num = |k: &str| -> f64 { report.get(k).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN) };
    let accepted_n = num("accepted");
    let received = num("received");
    let starved = num("starved");
    let (baseline, peak, final_rss) = (num("rss_baseline"), num("rss_peak"), num("rss_final"));
    let per_conn = (peak - baseline) / accepted_n.max(1.0);
    let all_served = accepted_n == f64::from(a.connections) && starved == 0.0 && received == expected as f64;
    let fields: Vec<(&str, String)> = vec![
        ("connections", a.connections.to_string()),
        ("interval_s", format!("{}", a.interval.as_secs_f64())),
        ("seconds", format!("{window:.3}")),
        ("client_threads", a.threads.to_string()),
        ("opened", opened.to_string()),
        ("connect_failures", connected.failed.to_string()),
        ("accepted", format!("{accepted_n}")),
        ("client_ports", format!("{}", num("client_ports"))),
        ("connect_s", format!("{connect_s:.3}")),
        ("accept_s", accepted.get(1).cloned().unwrap_or_default()),
        ("messages_expected", expected.to_string()),
        ("messages_received", format!("{received}")),
        ("starved", format!("{starved}")),
        ("errors", format!("{}", num("errors"))),
        ("write_errors", write_errors.to_string()),
        ("all_served", all_served.to_string()),
        ("latency_p50_ms", format!("{}", num("latency_p50_ms"))),
        ("latency_p99_ms", format!("{}", num("latency_p99_ms"))),
        ("latency_max_ms", format!("{}", num("latency_max_ms"))),
        ("late_over_1s", format!("{}", num("late_1s"))),
        ("first_message_latency_max_ms", format!("{}", num("first_latency_max_ms"))),
        ("client_data_pkts_sent", sent.pkts_sent.to_string()),
        ("client_retransmits", sent.retransmits.to_string()),
        ("client_exp_timeouts", sent.timeouts.to_string()),
        ("client_connections_unacknowledged", sent.unacknowledged.to_string()),
        ("server_data_pkts_recv", format!("{}", num("data_pkts_recv"))),
        ("server_rcv_loss", format!("{}", num("rcv_loss"))),
        ("server_unread_bytes", format!("{}", num("unread_bytes"))),
        ("server_udp_drops", format!("{server_drops}")),
        ("client_udp_drops", format!("{client_drops}")),
        ("server_rss_baseline_bytes", format!("{baseline}")),
        ("server_rss_peak_bytes", format!("{peak}")),
        ("server_rss_final_bytes", format!("{final_rss}")),
        ("server_bytes_per_connection", format!("{per_conn:.0}")),
        ("client_rss_peak_bytes", client_peak.to_string()),
        ("server_cpu_s_connect", format!("{:.2}", server_cpu1 - server_cpu0)),
        ("client_cpu_s_connect", format!("{:.2}", client_cpu1 - client_cpu0)),
        ("server_cpu_s", format!("{:.2}", server_cpu2 - server_cpu1)),
        ("client_cpu_s", format!("{:.2}", client_cpu2 - client_cpu1)),
    ];
    if a.json {
        // Numbers and booleans as they are, anything else (a NaN: not reported) as null.
        let json_value = |v: &String| match v.parse::<f64>() {
            Ok(x) if x.is_finite() => v.clone(),
            _ if v == "true" || v == "false" => v.clone(),
            _ => "null".to_string(),
        };
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("\"{k}\":{}", json_value(v)))
            .chain([
                format!("\"first_error\":{:?}", report.get("first_error").cloned().unwrap_or_default()),
                format!("\"first_connect_error\":{:?}", connected.first_error.clone().unwrap_or_default()),
            ])
            .collect();
        println!("{{{}}}", body.join(","));
        return;
    }
    let mb = |b: f64| b / 1e6;
    let transport = format!(
        "  transport: client sent {} data packets ({} retransmitted, {} EXP expiries; {} connections with \
         packets unacknowledged at the window's end); by the end, end markers included, the listener received {} ({} detected lost), {} bytes \
         stored but not read at the end; the kernel dropped {server_drops} datagrams for the listener's UDP \
         socket and {client_drops} for the client's (full receive buffers)",
        sent.pkts_sent,
        sent.retransmits,
        sent.timeouts,
        sent.unacknowledged,
        num("data_pkts_recv"),
        num("rcv_loss"),
        num("unread_bytes")
    );
    let every = if a.interval.is_zero() {
        "one message as it connects, then idle".to_string()
    } else {
        format!("a 64-byte message every {} s", a.interval.as_secs_f64())
    };
    println!(
        "{} connections from {} client port(s), {every}, for {window:.1} s",
        a.connections,
        num("client_ports")
    );
    println!(
        "  connect: {opened} opened ({} failed{}) and {accepted_n} accepted in {connect_s:.1} s",
        connected.failed,
        connected.first_error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
    );
    println!(
        "  messages: {expected} sent, {received} received intact and in order; starved connections: {starved} \
         (first error: {})",
        report.get("first_error").filter(|e| !e.is_empty()).map_or("none", String::as_str)
    );
    println!(
        "  latency of messages 1 and on: p50 {} ms, p99 {} ms, max {} ms; over 1 s: {}; message 0 (waited for \
         accept): max {} ms",
        num("latency_p50_ms"),
        num("latency_p99_ms"),
        num("latency_max_ms"),
        num("late_1s"),
        num("first_latency_max_ms")
    );
    println!(
        "  listener resident: {:.1} MB before, peak {:.1} MB, final {:.1} MB ({:.1} kB a connection)",
        mb(baseline),
        mb(peak),
        mb(final_rss),
        per_conn / 1e3
    );
    println!("{transport}");
    let pct = |cpu: f64| 100.0 * cpu / window.max(1e-9);
    let (s, c) = (server_cpu2 - server_cpu1, client_cpu2 - client_cpu1);
    println!(
        "  CPU over the window: listener {s:.2} s ({:.1}% of a core), client {c:.2} s ({:.1}%)",
        pct(s),
        pct(c)
    );
    println!("  all served: {all_served}");
}
