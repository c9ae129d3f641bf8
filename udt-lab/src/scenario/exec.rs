//! Running independent simulations on several threads, results in submission order.
//!
//! Invariant: the results do not depend on the number of threads, only the wall time does;
//! each job builds and owns its whole simulation.

use std::sync::Mutex;

use crate::report::RunResult;

/// One run to do.
pub type Job = AnyJob<RunResult>;

/// One job giving a `T`.
pub type AnyJob<T> = Box<dyn FnOnce() -> Result<T, String> + Send>;

/// Run `jobs` on up to `threads` threads; the first error wins.
pub fn execute(jobs: Vec<Job>, threads: usize) -> Result<Vec<RunResult>, String> {
    execute_any(jobs, threads)
}

/// [`execute`] for jobs giving any result.
pub fn execute_any<T: Send>(jobs: Vec<AnyJob<T>>, threads: usize) -> Result<Vec<T>, String> {
    let order: Vec<usize> = (0..jobs.len()).collect();
    execute_in_order(jobs, &order, threads)
}

/// [`execute_any`], starting the jobs in `order` (a permutation of their indices, e.g. the
/// longest first so no thread is left with a long one at the end); results still come in
/// submission order.
pub fn execute_in_order<T: Send>(
    jobs: Vec<AnyJob<T>>,
    order: &[usize],
    threads: usize,
) -> Result<Vec<T>, String> {
    let n = jobs.len();
    let mut slots: Vec<Option<AnyJob<T>>> = jobs.into_iter().map(Some).collect();
    let mut queue: Vec<(usize, AnyJob<T>)> =
        order.iter().filter_map(|&i| slots.get_mut(i)?.take().map(|j| (i, j))).collect();
    // Jobs `order` left out run last, in submission order.
    queue.extend(slots.into_iter().enumerate().filter_map(|(i, j)| j.map(|j| (i, j))));
    queue.reverse();
    let queue = Mutex::new(queue);
    let results: Mutex<Vec<Option<Result<T, String>>>> = Mutex::new((0..n).map(|_| None).collect());
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
