//! The extension path of Composable UDT (thesis §5.1): a congestion control written outside the
//! library, handed to a socket as a factory, used for a real transfer over loopback.
//!
//! The algorithm here is deliberately small: AIMD on the sending *rate* (not a window), +1% of
//! the rate per ACK, x0.8 per loss report, starting at 100 Mb/s. It shows each part a user
//! writes: the controller (`CongestionControl`: callbacks in, period and window out), the factory
//! (`CcFactory`: one controller per connection), and the socket option that installs it.
//!
//! Run: `cargo run --release -p udt-net --example custom_cc`

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use udt::proto::cc::{CcContext, CcFactory, CongestionControl};
use udt::proto::SeqNo;
use udt::{Options, UdtListener, UdtStream};

/// Rate AIMD: the whole state is the rate in packets per second.
#[derive(Debug)]
struct RateAimd {
    pkts_per_sec: f64,
    losses: u64,
}

impl CongestionControl for RateAimd {
    fn name(&self) -> &'static str {
        "rate-aimd"
    }

    fn on_ack(&mut self, _ctx: &mut CcContext<'_>, _ack: SeqNo) {
        self.pkts_per_sec = (self.pkts_per_sec * 1.01).min(2_000_000.0);
    }

    fn on_loss(&mut self, _ctx: &mut CcContext<'_>, _lost: &[(SeqNo, SeqNo)]) {
        self.pkts_per_sec = (self.pkts_per_sec * 0.8).max(100.0);
        self.losses += 1;
    }

    fn send_period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.pkts_per_sec)
    }

    fn congestion_window(&self) -> f64 {
        // Rate-based: the flow window (the receiver's buffer) is the only window.
        1e9
    }
}

/// One controller per connection.
#[derive(Debug)]
struct RateAimdFactory;

impl CcFactory for RateAimdFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        // 100 Mb/s of 1500-byte packets.
        Box::new(RateAimd { pkts_per_sec: 100e6 / 12_000.0, losses: 0 })
    }
}

fn main() -> std::io::Result<()> {
    const BYTES: usize = 64 << 20;
    let listener = UdtListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> std::io::Result<usize> {
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0;
        loop {
            match stream.read(&mut buf)? {
                0 => return Ok(total),
                n => total += n,
            }
        }
    });

    let mut options = Options::default();
    options.set_congestion_control_factory(Arc::new(RateAimdFactory));
    let mut stream = UdtStream::connect_with(addr, options)?;
    let started = std::time::Instant::now();
    let chunk = vec![0x5au8; 1 << 20];
    for _ in 0..BYTES / chunk.len() {
        stream.write_all(&chunk)?;
    }
    let stats = stream.stats(false);
    let name = stream.congestion_control();
    stream.close()?;
    let received = receiver.join().map_err(|_| std::io::Error::other("receiver panicked"))??;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} congestion control: {received} bytes in {secs:.2} s = {:.2} Gb/s, period {:.2} us, {} retransmitted",
        name,
        received as f64 * 8.0 / secs / 1e9,
        stats.now.send_period_us,
        stats.total.retransmits
    );
    assert_eq!(received, BYTES);
    Ok(())
}
