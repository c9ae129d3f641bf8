//! RBUDP's performance model (He et al. 2002 §4), to set measurements against: the best
//! throughput with no loss, eq. (4), and the number of re-blasts and the bytes they carry under
//! a constant loss rate, eqs. (5) and (6).
//!
//! Units: rates in bits per second, sizes in bytes (converted to bits where the paper mixes
//! them: its example, 55 ms one way, 600 Mb/s and 90% of the rate, needs 74.25 MB, which holds
//! only with S_total in bits in eq. (4)). These are pure functions of their arguments.

use std::time::Duration;

/// B_best / B_send = 1 / (1 + RTT x B_send / S_total), eq. (4): the fraction of the sending
/// rate a transfer of `total_bytes` achieves with no loss, one blast and one acknowledgement
/// (the acknowledgement's own transmission time, which the paper drops, is left out too).
/// 0 for an empty transfer.
pub fn model_best_ratio(rtt: Duration, send_rate_bps: f64, total_bytes: u64) -> f64 {
    let total_bits = total_bytes as f64 * 8.0;
    1.0 / (1.0 + rtt.as_secs_f64() * send_rate_bps / total_bits)
}

/// N_resend ≈ log_L(S_packet / S_total), eq. (5): the re-blasts (blasts after the first, so
/// `Counters::rounds - 1`) until less than one packet is left, with a constant loss rate
/// `loss` (0..1) on every blast. 0 with no loss or when the transfer is one packet or less;
/// infinite when everything is lost.
pub fn model_rounds(loss: f64, packet_bytes: u64, total_bytes: u64) -> f64 {
    if loss >= 1.0 {
        return f64::INFINITY;
    }
    if loss <= 0.0 || total_bytes <= packet_bytes || packet_bytes == 0 {
        return 0.0;
    }
    (packet_bytes as f64 / total_bytes as f64).ln() / loss.ln()
}

/// S_resend = S_total x L (1 - L^N_resend) / (1 - L), eq. (6): the bytes all re-blasts carry
/// together, with N_resend from [`model_rounds`]. Infinite when everything is lost.
pub fn model_resend_bytes(loss: f64, packet_bytes: u64, total_bytes: u64) -> f64 {
    if loss >= 1.0 {
        return f64::INFINITY;
    }
    if loss <= 0.0 {
        return 0.0;
    }
    let n = model_rounds(loss, packet_bytes, total_bytes);
    total_bytes as f64 * loss * (1.0 - loss.powf(n)) / (1.0 - loss)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn the_papers_example_gives_ninety_percent() {
        // He et al. §4: Chicago-Amsterdam, T_prop 55 ms, 600 Mb/s, 74.25 MB for 90%.
        let ratio = model_best_ratio(Duration::from_millis(110), 600e6, 74_250_000);
        assert!(close(ratio, 0.9), "{ratio}");
    }

    #[test]
    fn the_best_ratio_grows_with_the_payload_and_falls_with_rtt_and_rate() {
        let r = |ms, rate, bytes| model_best_ratio(Duration::from_millis(ms), rate, bytes);
        assert!(close(r(0, 1e9, 1000), 1.0), "no RTT: the full rate");
        assert_eq!(r(10, 1e9, 0), 0.0, "nothing sent");
        assert!(r(10, 1e9, 1 << 30) > r(10, 1e9, 1 << 20));
        assert!(r(100, 1e9, 1 << 30) < r(10, 1e9, 1 << 30));
        assert!(r(10, 1e10, 1 << 30) < r(10, 1e9, 1 << 30));
        // RTT x B_send = S_total: half the rate.
        assert!(close(r(1000, 8e6, 1_000_000), 0.5));
    }

    #[test]
    fn the_rounds_are_the_log_of_the_packets_in_base_loss() {
        // 10% loss on 1000 packets: 100, 10, 1 left after three re-blasts.
        assert!(close(model_rounds(0.1, 1000, 1_000_000), 3.0));
        assert!(close(model_rounds(0.5, 1, 1024), 10.0));
        assert_eq!(model_rounds(0.0, 1460, 1 << 30), 0.0);
        assert_eq!(model_rounds(0.1, 1460, 1000), 0.0, "a single packet");
        assert_eq!(model_rounds(0.1, 0, 1000), 0.0);
        assert_eq!(model_rounds(1.0, 1460, 1 << 20), f64::INFINITY);
        assert!(model_rounds(0.2, 1460, 1 << 20) > model_rounds(0.1, 1460, 1 << 20));
    }

    #[test]
    fn the_resent_bytes_sum_the_geometric_series() {
        // L = 0.1, three re-blasts: 0.1 + 0.01 + 0.001 of the total.
        assert!(close(model_resend_bytes(0.1, 1000, 1_000_000), 111_000.0));
        assert_eq!(model_resend_bytes(0.0, 1000, 1_000_000), 0.0);
        assert_eq!(model_resend_bytes(1.0, 1000, 1_000_000), f64::INFINITY);
    }
}
