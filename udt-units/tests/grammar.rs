//! Properties of the whole grammar: nothing panics, and what a prefix means does not depend
//! on the dimension or on how the number is written.

use proptest::prelude::*;
use udt_units::{parse_amount, parse_fraction, parse_rate, parse_size, parse_time, Bare, TimeUnit};

const TOO_FAST: &str = "rates of 1000 Tbit/s or more are not supported";

fn rate(s: &str) -> Result<u64, String> {
    parse_rate(s).map_err(|e| e.reason().to_owned())
}

proptest! {
    #[test]
    fn no_input_panics(s in "\\PC{0,12}") {
        let _ = parse_rate(&s);
        let _ = parse_size(&s);
        let _ = parse_amount(&s, Bare::Packets);
        let _ = parse_time(&s, Some(TimeUnit::Secs)).map(|t| t.duration());
        let _ = parse_fraction(&s);
    }

    #[test]
    fn near_misses_do_not_panic(s in "[0-9.]{0,4}[ kmgtKMGTiIbBps/%µnu-]{0,6}") {
        let _ = parse_rate(&s);
        let _ = parse_size(&s);
        let _ = parse_time(&s, None);
        let _ = parse_fraction(&s);
    }

    #[test]
    fn si_prefixes_are_powers_of_1000(n in 0u64..1_000_000, p in 0usize..4) {
        let (prefix, scale) = [("k", 1_000u64), ("m", 1_000_000), ("g", 1_000_000_000), ("t", 1_000_000_000_000)][p];
        let bits = n * scale;
        let expected = if bits < 1_000_000_000_000_000 { Ok(bits) } else { Err(TOO_FAST.to_owned()) };
        prop_assert_eq!(rate(&format!("{n}{prefix}bit")), expected.clone());
        prop_assert_eq!(rate(&format!("{n}{}", prefix.to_uppercase())), expected);
        prop_assert_eq!(parse_size(&format!("{n}{}B", prefix.to_uppercase())), Ok(n * scale));
    }

    #[test]
    fn iec_prefixes_are_powers_of_1024(n in 0u64..1_000_000, p in 1i32..4) {
        let prefix = ["", "Ki", "Mi", "Gi"][p as usize];
        prop_assert_eq!(parse_size(&format!("{n}{prefix}B")), Ok(n << (10 * p)));
        let bits = (n << (10 * p)) * 8;
        let expected = if bits < 1_000_000_000_000_000 { Ok(bits) } else { Err(TOO_FAST.to_owned()) };
        prop_assert_eq!(rate(&format!("{n}{prefix}B/s")), expected);
    }

    #[test]
    fn per_cent_is_the_fraction_times_100(thousandths in 0u32..=1000) {
        let fraction = format!("{}.{:03}", thousandths / 1000, thousandths % 1000);
        let percent = format!("{}.{}%", thousandths / 10, thousandths % 10);
        prop_assert_eq!(parse_fraction(&fraction), parse_fraction(&percent));
    }

    #[test]
    fn seconds_and_milliseconds_agree(ms in 0u32..100_000) {
        let a = parse_time(&format!("{ms}ms"), None).unwrap();
        let b = parse_time(&format!("{}.{:03}s", ms / 1000, ms % 1000), None).unwrap();
        prop_assert_eq!(a.secs(), b.secs());
        prop_assert_eq!(a.duration(), b.duration());
    }
}
