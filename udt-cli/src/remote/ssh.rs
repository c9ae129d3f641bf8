//! The near end of an ssh-started transfer: start the far `udt` through ssh, hand it the key,
//! read the port it announces, connect to it, and learn the far end's outcome.
//!
//! Invariants: the key goes only to the ssh child's standard input; the far end's standard
//! error is shown line by line as it comes (prefixed with the host) and its last lines are
//! kept for the error; ssh's exit status is the far end's outcome (127: no `udt` there, 255:
//! ssh itself failed); the ssh child never outlives [`Far`] (killed after [`EXIT_LIMIT`]).

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rand_core::{OsRng, RngCore};
use udt::secure::Credential;
use udt::{Options, UdtStream};

use super::spec::quote_path;
use super::{key_line, PortRange, ANNOUNCE, BOOTSTRAP_VERSION};
use crate::{interrupt, link, net};

/// How long the far end has to exit once the near end is done.
const EXIT_LIMIT: Duration = Duration::from_secs(10);
/// Lines of the far end's standard error kept for an error message.
const TAIL: usize = 20;

/// How to reach the far host, from the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct SshArgs {
    /// The ssh command for a `HOST:PATH` operand, with its options, split at spaces: `ssh -p
    /// 2222 -i ~/.ssh/lab`. The destination and the far command are appended after `--`.
    #[arg(long = "ssh", value_name = "CMD", default_value = "ssh")]
    pub ssh: String,
    /// The `udt` program on the far host, when it is not on the far PATH (`~/bin/udt`).
    #[arg(long, value_name = "PATH", default_value = "udt")]
    pub remote_udt: String,
    /// The UDP ports the listening end may use, LO-HI or PORT (default: any free port): with a
    /// host reached by ssh, the far end listens in this range; open it in the far firewall.
    #[arg(long, value_name = "LO-HI", value_parser = super::parse_port_range)]
    pub port_range: Option<PortRange>,
    /// (Internal) The far end of an ssh-started transfer: read the key from standard input,
    /// listen in --port-range and announce the port on standard output.
    #[arg(long, hide = true)]
    pub bootstrap: bool,
}

/// What the far end announced.
#[derive(Clone, Debug)]
struct Announced {
    port: u16,
    /// The address the ssh connection reached there, if it said.
    reached: Option<std::net::IpAddr>,
}

/// The far `udt`, running under ssh.
pub struct Far {
    child: Child,
    stdin: Option<ChildStdin>,
    announced: mpsc::Receiver<Announced>,
    stderr: Option<JoinHandle<Vec<String>>>,
    /// The host as given (where the UDT connection goes).
    host: String,
    /// `recv` or `send`: the far command, for messages.
    far_command: &'static str,
    port_range: Option<PortRange>,
    /// `--remote-udt`.
    remote_udt: String,
    key: [u8; 32],
}

impl Far {
    /// Start `udt FAR_COMMAND --bootstrap FAR_ARGS` (words already quoted for the far shell)
    /// on `destination` through `args.ssh`; `near_command` names this end in the far end's
    /// lines.
    pub fn start(
        args: &SshArgs,
        destination: &str,
        host: &str,
        far_command: &'static str,
        far_args: &[String],
        near_command: &'static str,
    ) -> Result<Far> {
        let mut words = args.ssh.split_whitespace();
        let program = words.next().context("--ssh is empty")?;
        let mut command = format!("{} {far_command} --bootstrap -q", quote_path(&args.remote_udt));
        if let Some(range) = args.port_range {
            command.push_str(&format!(" --port-range {range}"));
        }
        for word in far_args {
            command.push(' ');
            command.push_str(word);
        }
        tracing::info!(%command, "starting the far end");
        let mut child = Command::new(program)
            .args(words)
            .arg("--")
            .arg(destination)
            .arg(&command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => anyhow!("cannot run `{program}` (--ssh): not found"),
                _ => anyhow::Error::new(e).context(format!("cannot run `{program}` (--ssh)")),
            })?;
        let mut key = [0u8; 32];
        OsRng.fill_bytes(&mut key);
        let mut stdin = child.stdin.take();
        if let Some(pipe) = stdin.as_mut() {
            // A far end that is already gone shows in its exit status.
            let _ = pipe.write_all(key_line(&key).as_bytes()).and_then(|()| pipe.flush());
        }
        let stdout = child.stdout.take().context("the ssh child's standard output")?;
        let (tx, announced) = mpsc::channel();
        std::thread::Builder::new().name("far-stdout".into()).spawn(move || read_stdout(stdout, tx))?;
        let stderr = child.stderr.take().context("the ssh child's standard error")?;
        let shown = format!("udt {near_command}: {host}:");
        let stderr = std::thread::Builder::new().name("far-stderr".into()).spawn(move || {
            let mut tail = Vec::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("{shown} {line}");
                if tail.len() == TAIL {
                    tail.remove(0);
                }
                tail.push(line);
            }
            tail
        })?;
        Ok(Far {
            child,
            stdin,
            announced,
            stderr: Some(stderr),
            host: host.to_string(),
            far_command,
            port_range: args.port_range,
            remote_udt: args.remote_udt.clone(),
            key,
        })
    }

    /// Wait for the far end's port and connect to it with `options` (the key is set here).
    pub fn connect(&mut self, mut options: Options) -> Result<UdtStream> {
        let announced = loop {
            match self.announced.recv_timeout(link::POLL) {
                Ok(a) => break a,
                Err(mpsc::RecvTimeoutError::Timeout) if interrupt::requested() => {
                    return Err(interrupt::error().into())
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.wait_exit()?;
                    return Err(self.failure(status, "before it listened"));
                }
            }
        };
        tracing::info!(port = announced.port, "the far end listens");
        options.security = Some(Credential::Key(self.key));
        let addrs = self.addresses(&announced)?;
        net::connect_any(&addrs, options, net::ATTEMPT_DELAY).map_err(|e| {
            let port = announced.port;
            if e.kind() == io::ErrorKind::TimedOut {
                let range = match self.port_range {
                    Some(r) => format!("the far end listens in --port-range {r}: open that range"),
                    None => format!(
                        "open UDP port {port} there, or choose ports the firewall lets through with \
                         --port-range LO-HI"
                    ),
                };
                anyhow!(
                    "no answer from the far `udt {}` on {} UDP port {port} ({e}): a firewall between \
                     here and there may block UDP; {range}",
                    self.far_command,
                    self.host
                )
            } else {
                anyhow!(
                    "cannot connect to the far `udt {}` on {} UDP port {port}: {e}",
                    self.far_command,
                    self.host
                )
            }
        })
    }

    /// The addresses to connect to: the host as given, if it resolves here; otherwise (an alias
    /// of the ssh configuration) the address the ssh connection reached.
    fn addresses(&self, announced: &Announced) -> Result<Vec<SocketAddr>> {
        let resolved: Vec<SocketAddr> =
            (self.host.as_str(), announced.port).to_socket_addrs().map(Iterator::collect).unwrap_or_default();
        if !resolved.is_empty() {
            return Ok(resolved);
        }
        match announced.reached {
            Some(ip) => Ok(vec![SocketAddr::new(ip, announced.port)]),
            None => bail!("cannot resolve {} here (and the far end did not say its address)", self.host),
        }
    }

    /// The near end is done (`near_ok`: its transfer ran to its end and every file arrived):
    /// let the far end finish and return its outcome. When the near end failed, its error is
    /// the one to show: the far end's lines are shown, its status not made an error.
    pub fn finish(mut self, near_ok: bool) -> Result<()> {
        let status = self.wait_exit()?;
        if status.success() || !near_ok {
            self.stderr.take().map(JoinHandle::join);
            return Ok(());
        }
        Err(self.failure(status, "after the transfer"))
    }

    /// Wait for ssh to exit (killing it after [`EXIT_LIMIT`]), the far end's standard error
    /// shown to its end.
    fn wait_exit(&mut self) -> Result<ExitStatus> {
        self.stdin.take();
        let deadline = Instant::now() + EXIT_LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().context("waiting for ssh")? {
                break status;
            }
            if Instant::now() >= deadline || interrupt::requested() {
                let _ = self.child.kill();
                break self.child.wait().context("waiting for ssh")?;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Ok(status)
    }

    /// The error for the far end's exit `status`, `when` it happened.
    fn failure(&mut self, status: ExitStatus, when: &str) -> anyhow::Error {
        let tail = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        let said = tail.last().map(|l| format!(": {l}")).unwrap_or_default();
        let (host, far) = (&self.host, self.far_command);
        match status.code() {
            Some(127) if self.remote_udt == "udt" => anyhow!(
                "the far host {host} has no `udt` on its PATH (exit status 127{said}): install it there, \
                 or give its path with --remote-udt PATH"
            ),
            Some(127) => anyhow!(
                "the far host {host} has no `{}` (exit status 127{said}): check --remote-udt PATH",
                self.remote_udt
            ),
            Some(255) => anyhow!("ssh to {host} failed (exit status 255{said})"),
            Some(code) => anyhow!("the far `udt {far}` on {host} failed {when} (exit status {code}{said})"),
            None => anyhow!("the far `udt {far}` on {host} ended {when} ({status}{said})"),
        }
    }
}

impl Drop for Far {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Read the far end's standard output: the announcement goes to `tx`; anything else is logged.
fn read_stdout(stdout: std::process::ChildStdout, tx: mpsc::Sender<Announced>) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        match parse_announcement(&line) {
            Some(a) => {
                let _ = tx.send(a);
            }
            None => tracing::debug!(%line, "far end"),
        }
    }
}

/// `UDT-BOOTSTRAP 1 PORT ADDR`.
fn parse_announcement(line: &str) -> Option<Announced> {
    let mut words = line.split_whitespace();
    if words.next()? != ANNOUNCE || words.next()?.parse::<u32>().ok()? != BOOTSTRAP_VERSION {
        return None;
    }
    let port = words.next()?.parse::<u16>().ok().filter(|&p| p != 0)?;
    let reached = words.next().and_then(|a| a.parse().ok());
    Some(Announced { port, reached })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements() {
        let a = parse_announcement("UDT-BOOTSTRAP 1 4000 10.0.0.2").unwrap();
        assert_eq!((a.port, a.reached), (4000, Some("10.0.0.2".parse().unwrap())));
        let a = parse_announcement("UDT-BOOTSTRAP 1 4000 -").unwrap();
        assert_eq!((a.port, a.reached), (4000, None));
        for bad in ["", "UDT-BOOTSTRAP 2 4000 -", "UDT-BOOTSTRAP 1 0 -", "hello 1 4000", "UDT-BOOTSTRAP 1"] {
            assert!(parse_announcement(bad).is_none(), "{bad}");
        }
    }
}
