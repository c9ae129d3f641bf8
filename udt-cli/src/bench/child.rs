//! A benchmark process: one command run inside a network namespace under GNU time, with its
//! output in files, a deadline, and a guard that kills it.
//!
//! `ip netns exec NS /usr/bin/time -f "%e %U %S" -o FILE CMD...`: `ip` execs time, which forks
//! the command; the three are one process group of their own (so the terminal's Ctrl-C goes
//! to us only, and killing the group kills the command too). Invariant: once spawned, the
//! group is killed and reaped on every path (finish, deadline, interrupt, drop).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::interrupt;

/// GNU time, which measures each process's CPU time.
pub const GNU_TIME: &str = "/usr/bin/time";

/// A running command.
#[derive(Debug)]
pub struct TimedChild {
    name: String,
    child: Option<Child>,
    time_file: PathBuf,
    out_file: PathBuf,
    err_file: PathBuf,
}

/// What a finished command left.
#[derive(Debug)]
pub struct Finished {
    /// Its name (for messages).
    pub name: String,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// User + system CPU seconds of the command (children included), if GNU time said.
    pub cpu_s: Option<f64>,
    /// Wall-clock seconds of the command, if GNU time said.
    pub wall_s: Option<f64>,
}

impl TimedChild {
    /// Starts `argv` in namespace `ns`; its files go to `dir` as `name.{out,err,time}`.
    pub fn spawn(ns: &str, name: &str, argv: &[String], dir: &Path) -> Result<TimedChild> {
        let file = |ext: &str| dir.join(format!("{name}.{ext}"));
        let (time_file, out_file, err_file) = (file("time"), file("out"), file("err"));
        let out = File::create(&out_file).with_context(|| format!("cannot create {}", out_file.display()))?;
        let err = File::create(&err_file).with_context(|| format!("cannot create {}", err_file.display()))?;
        let _ = fs::remove_file(&time_file);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, GNU_TIME, "-f", "%e %U %S", "-o"])
            .arg(&time_file)
            .args(argv)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        tracing::debug!(ns, ?argv, "spawning {name}");
        let child = cmd.spawn().with_context(|| format!("cannot start {name} (`ip netns exec {ns} ...`)"))?;
        Ok(TimedChild { name: name.to_string(), child: Some(child), time_file, out_file, err_file })
    }

    /// Waits until it exits; past `deadline` (or on Ctrl-C) kills it and fails. A non-zero
    /// exit is an error carrying the end of its standard error.
    pub fn finish(mut self, deadline: Instant) -> Result<Finished> {
        let status = self.wait(deadline)?;
        let finished = self.collect();
        if !status.success() {
            bail!("{} failed ({status}): {}", finished.name, tail(&finished.stderr));
        }
        Ok(finished)
    }

    /// Stops a command that never exits by itself (a server): kills it and collects what it
    /// left (GNU time, killed with it, then reports no times).
    pub fn stop(mut self) -> Finished {
        self.kill();
        self.collect()
    }

    fn wait(&mut self, deadline: Instant) -> Result<ExitStatus> {
        loop {
            let Some(child) = self.child.as_mut() else { bail!("{} was already reaped", self.name) };
            if let Some(status) = child.try_wait().with_context(|| format!("waiting for {}", self.name))? {
                self.child = None;
                return Ok(status);
            }
            if interrupt::requested() {
                self.kill();
                bail!("interrupted");
            }
            if Instant::now() >= deadline {
                self.kill();
                let err = fs::read_to_string(&self.err_file).unwrap_or_default();
                bail!("{} did not finish in time (killed): {}", self.name, tail(&err));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn collect(&self) -> Finished {
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
        Finished {
            name: self.name.clone(),
            stdout: read(&self.out_file),
            stderr: read(&self.err_file),
            cpu_s: parse_time_report(&read(&self.time_file)).map(|(_, cpu)| cpu),
            wall_s: parse_time_report(&read(&self.time_file)).map(|(wall, _)| wall),
        }
    }

    /// Kills the process group and reaps the child.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TimedChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to the process group `pgid` (the child's pid: it leads its own group).
#[allow(unsafe_code)]
fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else { return };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; it touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Wall and user + system seconds from GNU time's `%e %U %S` line (the last line: time
/// writes "Command exited with non-zero status N" or "Command terminated by signal N" before).
pub fn parse_time_report(text: &str) -> Option<(f64, f64)> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let fields: Vec<f64> = line.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    match fields[..] {
        [wall, user, sys] => Some((wall, user + sys)),
        _ => None,
    }
}

/// The last few lines of a program's error output, on one line.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    let s = lines[start..].join(" | ");
    if s.is_empty() {
        "no error output".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_report() {
        assert_eq!(parse_time_report("10.01 1.50 2.25\n"), Some((10.01, 3.75)));
        assert_eq!(
            parse_time_report("Command exited with non-zero status 1\n0.5 0.25 0.25\n"),
            Some((0.5, 0.5))
        );
        assert_eq!(parse_time_report(""), None);
        assert_eq!(parse_time_report("garbage here\n"), None);
    }
}
