//! A connection's performance counters (UDT4's `perfmon`) as a Python `dict`.
//!
//! The top level holds the totals since the connection opened (`pkts_sent`, `bytes_recv`,
//! `retransmits`, ...), the instant values (`rtt_us`, `send_period_us`, `flow_window`,
//! `congestion_window`, ...), `elapsed` in seconds and the rates of the current interval
//! (`send_mbps`, `recv_mbps`); `interval` holds the counters of the interval alone, which
//! `stats(clear=True)` starts anew, and `interval_len` its length in seconds.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use udt::{Counters, InstantValues, Snapshot};

/// Set `dict[name] = value.name` for each field named.
macro_rules! fields {
    ($dict:expr, $value:expr, $($name:ident),+ $(,)?) => {
        $( $dict.set_item(stringify!($name), $value.$name)?; )+
    };
}

/// The counters as `dict` items.
fn counters(dict: &Bound<'_, PyDict>, c: &Counters) -> PyResult<()> {
    fields!(
        dict,
        c,
        pkts_sent,
        pkts_recv,
        bytes_sent,
        bytes_recv,
        snd_loss,
        rcv_loss,
        retransmits,
        acks_sent,
        acks_recv,
        naks_sent,
        naks_recv,
        ack2_sent,
        ack2_recv,
        dup_recv,
        dropped_invalid,
        dropped_no_room,
        msgs_dropped_ttl,
        msgs_expired_unsent,
        drop_requests_recv,
        timeouts,
        head_probes,
        send_busy_us,
    );
    Ok(())
}

/// The instant values as `dict` items.
fn instant(dict: &Bound<'_, PyDict>, v: &InstantValues) -> PyResult<()> {
    fields!(
        dict,
        v,
        send_period_us,
        flow_window,
        congestion_window,
        flight,
        rtt_us,
        rtt_var_us,
        bandwidth_pkts,
        recv_rate_pkts,
        send_buf_free_bytes,
        recv_buf_free_bytes,
    );
    Ok(())
}

/// The snapshot as a `dict` (see the module's doc), with the congestion control's name.
pub fn to_dict<'py>(py: Python<'py>, s: &Snapshot, cc: &str) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    counters(&dict, &s.total)?;
    instant(&dict, &s.now)?;
    dict.set_item("elapsed", s.elapsed.as_secs_f64())?;
    dict.set_item("send_mbps", s.send_mbps)?;
    dict.set_item("recv_mbps", s.recv_mbps)?;
    dict.set_item("cc", cc)?;
    let interval = PyDict::new(py);
    counters(&interval, &s.interval)?;
    dict.set_item("interval", interval)?;
    dict.set_item("interval_len", s.interval_len.as_secs_f64())?;
    Ok(dict)
}
