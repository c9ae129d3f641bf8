//! The async API (feature `tokio`) over loopback: concurrent connections on one runtime.
#![cfg(feature = "tokio")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use udt::{AsyncUdtListener, AsyncUdtStream, Options};

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Xoshiro256PlusPlus::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_async_connections_each_carry_their_data() {
    let listener = AsyncUdtListener::bind_with("127.0.0.1:0", Options::default()).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (mut s, _) = listener.accept().await.unwrap();
            tasks.push(tokio::spawn(async move {
                let mut seed = [0u8; 8];
                s.read_exact(&mut seed).await.unwrap();
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                (u64::from_le_bytes(seed), got)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    let mut clients = Vec::new();
    for seed in 0..8u64 {
        clients.push(tokio::spawn(async move {
            let mut c = AsyncUdtStream::connect_with(addr, Options::default()).await.unwrap();
            c.write_all(&seed.to_le_bytes()).await.unwrap();
            c.write_all(&data(4 << 20, seed)).await.unwrap();
            c.shutdown().await.unwrap();
        }));
    }
    for c in clients {
        tokio::time::timeout(Duration::from_secs(60), c).await.unwrap().unwrap();
    }
    let received = tokio::time::timeout(Duration::from_secs(60), server).await.unwrap().unwrap();
    assert_eq!(received.len(), 8);
    for (seed, got) in received {
        assert!(got == data(4 << 20, seed), "connection {seed}: data differs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_connections_with_a_key_are_secured_and_a_wrong_key_is_refused() {
    let secure =
        |k: u8| Options { security: Some(udt::secure::Credential::Key([k; 32])), ..Options::default() };
    let listener = AsyncUdtListener::bind_with("127.0.0.1:0", secure(3)).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        let wrong = listener.accept().await.map(|_| ());
        (got, wrong)
    });
    let mut c = AsyncUdtStream::connect_with(addr, secure(3)).await.unwrap();
    c.write_all(&data(1 << 20, 9)).await.unwrap();
    c.shutdown().await.unwrap();
    let opened = c.into_std().seal_counters().expect("secured").opened;
    assert!(opened > 0);
    let e = AsyncUdtStream::connect_with(addr, secure(4)).await.expect_err("a wrong key");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    let (got, wrong) = tokio::time::timeout(Duration::from_secs(60), server).await.unwrap().unwrap();
    assert!(got == data(1 << 20, 9), "data differs");
    assert_eq!(wrong.expect_err("refused").kind(), std::io::ErrorKind::PermissionDenied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_listener_is_not_held_up_by_a_peer_that_stalls_its_key_agreement() {
    let key = udt::secure::Credential::Key([6; 32]);
    let options = Options {
        security: Some(key.clone()),
        handshake_timeout: Duration::from_secs(60),
        ..Options::default()
    };
    let listener = AsyncUdtListener::bind_with("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    // Connected at the UDT level (plain, so it never starts the agreement), silent after.
    let stalled = AsyncUdtStream::connect_with(addr, Options::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let good = tokio::spawn(async move {
        let mut c = AsyncUdtStream::connect_with(addr, Options { security: Some(key), ..Options::default() })
            .await
            .unwrap();
        c.write_all(b"on time").await.unwrap();
        c
    });
    let (mut s, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
        .await
        .expect("accepted while the other peer stalls")
        .unwrap();
    let mut got = [0u8; 7];
    s.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"on time");
    drop(good.await.unwrap());
    drop(stalled);
}

/// A connection shared between tasks: one writes through `&AsyncUdtStream` while another reads
/// its counters, `flush_acknowledged` returns once the peer acknowledged everything, and a
/// connection set up with the blocking API carries on as an async one (`from_std`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_async_stream_is_written_by_one_task_and_watched_by_another() {
    let listener = udt::UdtListener::bind_with("127.0.0.1:0", Options::default()).unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = std::thread::spawn(move || listener.accept().unwrap().0);
    let blocking =
        tokio::task::spawn_blocking(move || udt::UdtStream::connect_with(addr, Options::default()))
            .await
            .unwrap()
            .unwrap();
    let local = blocking.local_addr().unwrap();
    let client = std::sync::Arc::new(AsyncUdtStream::from_std(blocking));
    let server = AsyncUdtStream::from_std(
        tokio::task::spawn_blocking(move || accepting.join().unwrap()).await.unwrap(),
    );
    assert_eq!(client.local_addr().unwrap(), local);
    assert_eq!(client.congestion_control(), udt::cc::DEFAULT_CC);

    let payload = data(3 << 20, 11);
    let writer = {
        let (client, payload) = (std::sync::Arc::clone(&client), payload.clone());
        tokio::spawn(async move {
            let mut w = &*client;
            w.write_all(&payload).await.unwrap();
            tokio::time::timeout(Duration::from_secs(30), client.flush_acknowledged())
                .await
                .unwrap()
                .unwrap();
        })
    };
    let reader = tokio::spawn(async move {
        let mut server = server;
        let mut got = vec![0u8; payload.len()];
        server.read_exact(&mut got).await.unwrap();
        (got == payload, server)
    });
    // Watched meanwhile, from this task.
    while !writer.is_finished() {
        let _ = client.stats(false);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    writer.await.unwrap();
    let acked = client.stats(false);
    assert_eq!(acked.now.flight, 0, "everything acknowledged once flush_acknowledged returned");
    let (same, _server) = tokio::time::timeout(Duration::from_secs(30), reader).await.unwrap().unwrap();
    assert!(same, "data differs");
    std::sync::Arc::try_unwrap(client).unwrap().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_chunk_reads_see_the_stream_and_end_with_it() {
    let listener = AsyncUdtListener::bind_with("127.0.0.1:0", Options::default()).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        let (mut got, mut chunks) = (Vec::new(), Vec::new());
        while s.read_chunks(256 << 10, &mut chunks).await.unwrap() > 0 {
            chunks.iter().for_each(|c| got.extend_from_slice(c));
        }
        got
    });
    let mut c = AsyncUdtStream::connect_with(addr, Options::default()).await.unwrap();
    c.write_all(&data(6 << 20, 11)).await.unwrap();
    c.shutdown().await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(60), server).await.unwrap().unwrap();
    assert!(got == data(6 << 20, 11), "data differs");
}
