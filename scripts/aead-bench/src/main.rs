//! AES-256-GCM as a secured connection uses it, one datagram at a time (16-byte associated data,
//! a 1456-byte payload, sealed and opened in place), with ring, aws-lc-rs and RustCrypto's
//! aes-gcm: CPU seconds per 10^9 payload bytes on one core, three rounds. The numbers and the
//! choice are in docs/dependencies.md. A crate of its own (not a workspace member), so the
//! candidates never enter the project's build: `cargo run --release` here.
use std::time::Instant;

const PAYLOAD: usize = 1456;
const N: usize = 400_000; // ~0.58 GB per measurement
const M: usize = 1000; // distinct sealed datagrams opened in turn (each copied first)

fn nonce12(i: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&i.to_be_bytes());
    n
}

fn report(name: &str, what: &str, t: f64) {
    let gb = (N * PAYLOAD) as f64 / 1e9;
    println!("{name:10} {what:5} {:.3} s/GB  {:.1} Gb/s", t / gb, gb * 8.0 / t);
}

/// ring and aws-lc-rs share one API (aws-lc-rs follows ring's): one benchmark body for both.
macro_rules! ring_api_bench {
    ($fn_name:ident, $krate:ident, $label:literal) => {
        fn $fn_name(key: &[u8; 32], aad: &[u8; 16]) {
            use $krate::aead::*;
            let k = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).unwrap());
            let mut buf = vec![7u8; PAYLOAD];
            let t = Instant::now();
            for i in 0..N {
                let tag = k.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce12(i as u64)), Aad::from(aad), &mut buf).unwrap();
                std::hint::black_box(tag.as_ref());
            }
            report($label, "seal", t.elapsed().as_secs_f64());
            let sealed: Vec<Vec<u8>> = (0..M).map(|i| { let mut m = vec![i as u8; PAYLOAD]; let tag = k.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce12(i as u64)), Aad::from(aad), &mut m).unwrap(); m.extend_from_slice(tag.as_ref()); m }).collect();
            let mut b = vec![0u8; PAYLOAD + 16];
            let t = Instant::now();
            let mut ok = 0;
            for i in 0..N {
                b.copy_from_slice(&sealed[i % M]);
                ok += k.open_in_place(Nonce::assume_unique_for_key(nonce12((i % M) as u64)), Aad::from(aad), &mut b).is_ok() as usize;
            }
            report($label, "open", t.elapsed().as_secs_f64());
            assert_eq!(ok, N);
            std::hint::black_box(ok);
        }
    };
}

ring_api_bench!(bench_ring, ring, "ring");
ring_api_bench!(bench_awslc, aws_lc_rs, "aws-lc-rs");

fn bench_rustcrypto(key: &[u8; 32], aad: &[u8; 16]) {
    use aes_gcm::aead::{AeadInPlace, KeyInit};
    use aes_gcm::{Aes256Gcm, Nonce, Tag};
    let k = Aes256Gcm::new_from_slice(key).unwrap();
    let mut buf = vec![7u8; PAYLOAD];
    let t = Instant::now();
    for i in 0..N {
        let tag = k.encrypt_in_place_detached(Nonce::from_slice(&nonce12(i as u64)), aad, &mut buf).unwrap();
        std::hint::black_box(tag);
    }
    report("aes-gcm", "seal", t.elapsed().as_secs_f64());
    let sealed: Vec<(Vec<u8>, Tag)> = (0..M).map(|i| { let mut m = vec![i as u8; PAYLOAD]; let tag = k.encrypt_in_place_detached(Nonce::from_slice(&nonce12(i as u64)), aad, &mut m).unwrap(); (m, tag) }).collect();
    let t = Instant::now();
    let mut ok = 0;
    for i in 0..N {
        let (m, tag) = &sealed[i % M];
        buf.copy_from_slice(m);
        ok += k.decrypt_in_place_detached(Nonce::from_slice(&nonce12((i % M) as u64)), aad, &mut buf, tag).is_ok() as usize;
    }
    report("aes-gcm", "open", t.elapsed().as_secs_f64());
    assert_eq!(ok, N);
    std::hint::black_box(ok);
}

fn main() {
    let key = [3u8; 32];
    let aad = [1u8; 16];
    for _ in 0..3 {
        bench_ring(&key, &aad);
        bench_awslc(&key, &aad);
        bench_rustcrypto(&key, &aad);
    }
    println!("open: each includes copying the 1472-byte sealed datagram into the buffer first");
}
