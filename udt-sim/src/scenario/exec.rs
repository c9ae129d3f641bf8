//! Running independent simulations on several threads, results in submission order.
//!
//! Invariant: the results do not depend on the number of threads, only the wall time does;
//! each job builds and owns its whole simulation.

use std::sync::Mutex;

use crate::report::RunResult;

/// One run to do.
pub type Job = Box<dyn FnOnce() -> Result<RunResult, String> + Send>;

/// Run `jobs` on up to `threads` threads; the first error wins.
pub fn execute(jobs: Vec<Job>, threads: usize) -> Result<Vec<RunResult>, String> {
    let n = jobs.len();
    let queue: Mutex<Vec<(usize, Job)>> = Mutex::new(jobs.into_iter().enumerate().rev().collect());
    let results: Mutex<Vec<Option<Result<RunResult, String>>>> = Mutex::new((0..n).map(|_| None).collect());
    let threads = threads.clamp(1, n.max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let next = queue.lock().map(|mut q| q.pop()).unwrap_or(None);
                let Some((i, job)) = next else { break };
                let r = job();
                if let Ok(mut res) = results.lock() {
                    res[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().map_err(|_| "a run panicked".to_string())?;
    results.into_iter().map(|r| r.unwrap_or_else(|| Err("a run panicked".into()))).collect()
}
