// udt4_perf: memory-to-memory throughput, like UDT4's appclient/appserver.
//   udt4_perf --listen PORT      accepts --count connections (default 1), reads
//                                each until the peer closes;
//   udt4_perf --connect H:P --secs T   sends a static buffer with large
//                                UDT::send calls (--chunk, default 1 MiB) for
//                                T seconds, then closes (linger).
// Both print READY <port> (listener: bound port; client: local port once
// connected) and per connection
//   DONE bytes=<n> secs=<t> mbps=<x> cpu_user=<s> cpu_sys=<s>
// mbps = bytes*8/secs/1e6. Receiver: secs from accept to the last byte
// received. Sender: secs from connected to close() returned (so it includes
// draining the send buffer). --maxbw caps the sender's rate with UDT_MAXBW
// (bytes per second of UDT packets, set before connect). cpu_*: getrusage(RUSAGE_SELF) deltas (all
// threads, including UDT's) over the same interval. The sender also writes a
// one-line UDT perfmon summary to stderr ("INFO perfmon ...") before closing.
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_perf --listen PORT [--bind ADDR] [--count N] [--timeout SECS] [--mss N]\n"
    "       udt4_perf --connect HOST:PORT --secs T [--chunk BYTES] [--maxbw BYTES_PER_SEC] [--timeout SECS]\n"
    "                 [--mss N]\n"
    "  --listen PORT    receiver: UDP port (0 = any; printed as READY <port>)\n"
    "  --bind ADDR      receiver local address, default 127.0.0.1\n"
    "  --count N        receiver: connections to serve one after another, default 1\n"
    "  --connect HOST:PORT  sender: receiver address\n"
    "  --secs T         sender: seconds to send for (float)\n"
    "  --chunk BYTES    sender: bytes per UDT::send call, default 1048576\n"
    "  --maxbw BYTES_PER_SEC  sender: UDT_MAXBW, the most bytes per second of UDT packets\n"
    "                   (headers and retransmissions included) it sends; default no cap\n" INTEROP_COMMON_USAGE;

static void print_perf(uint64_t bytes, double secs, const CpuTimes& c0, const CpuTimes& c1) {
    double mbps = secs > 0 ? bytes * 8.0 / secs / 1e6 : 0.0;
    printf("DONE bytes=%" PRIu64 " secs=%.6f mbps=%.2f cpu_user=%.3f cpu_sys=%.3f\n", bytes, secs, mbps,
           c1.user - c0.user, c1.sys - c0.sys);
    fflush(stdout);
}

static void print_perfmon(UDTSOCKET u) {
    UDT::TRACEINFO t;
    if (UDT::perfmon(u, &t, false) == UDT::ERROR) return;
    fprintf(stderr,
            "INFO perfmon pkt_sent=%" PRId64 " pkt_recv=%" PRId64
            " snd_loss=%d rcv_loss=%d retrans=%d rtt_ms=%.3f cwnd=%d flow_window=%d snd_period_us=%.3f\n",
            static_cast<int64_t>(t.pktSentTotal), static_cast<int64_t>(t.pktRecvTotal), t.pktSndLossTotal,
            t.pktRcvLossTotal, t.pktRetransTotal, t.msRTT, t.pktCongestionWindow, t.pktFlowWindow, t.usPktSndPeriod);
}

int main(int argc, char** argv) {
    prog_name() = "udt4_perf";
    Args a(argc, argv,
           {{"listen", true}, {"bind", true}, {"count", true}, {"connect", true}, {"secs", true}, {"chunk", true},
            {"maxbw", true}, INTEROP_COMMON_OPTS},
           USAGE);
    if (a.has("listen") == a.has("connect")) a.usage_error("give exactly one of --listen PORT or --connect HOST:PORT");

    if (a.has("listen")) {
        uint64_t count = a.u64("count", 1);
        Common c = init(a);
        UDTSOCKET l = listen_on(a, "listen", true, SOCK_STREAM, c);
        const int BUFSZ = 1 << 20;
        std::vector<uint8_t> buf(BUFSZ);
        for (uint64_t i = 0; i < count; ++i) {
            UDTSOCKET s = accept_one(l, c);
            CpuTimes c0 = cpu_now(), c1 = c0;
            double t0 = now_secs(), tlast = t0;
            uint64_t bytes = 0;
            for (;;) {
                int r = recv_some(s, buf.data(), BUFSZ);
                if (r == 0) break;
                bytes += static_cast<uint64_t>(r);
                tlast = now_secs();
                c1 = cpu_now();
            }
            print_perf(bytes, tlast - t0, c0, c1);
            close_socket(s);
        }
        close_socket(l);
    } else {
        Addr peer = parse_hostport(a, "connect", a.req_str("connect"));
        double secs = a.req_f64("secs");
        uint64_t chunk = a.u64("chunk", 1 << 20);
        if (chunk < 1 || chunk > (1u << 30)) a.usage_error("--chunk must be in [1, 2^30]");
        bool capped = a.has("maxbw");
        uint64_t maxbw = a.u64("maxbw", 0);
        if (capped && (maxbw < 1 || maxbw > static_cast<uint64_t>(INT64_MAX)))
            a.usage_error("--maxbw must be in [1, 2^63)");
        Common c = init(a);
        UDTSOCKET u = new_socket(peer.family, SOCK_STREAM, c);
        if (capped) {
            int64_t bw = static_cast<int64_t>(maxbw);
            if (UDT::setsockopt(u, 0, UDT_MAXBW, &bw, sizeof bw) == UDT::ERROR) udt_fail("setsockopt(UDT_MAXBW)");
        }
        connect_socket(u, peer);
        print_ready(u);
        std::vector<uint8_t> buf(chunk);
        XorShift64 g(1);
        g.fill(buf.data(), buf.size());
        CpuTimes c0 = cpu_now();
        double t0 = now_secs();
        uint64_t bytes = 0;
        while (now_secs() - t0 < secs) {
            send_all(u, buf.data(), buf.size());
            bytes += chunk;
        }
        print_perfmon(u);
        close_socket(u);
        double t1 = now_secs();
        print_perf(bytes, t1 - t0, c0, cpu_now());
    }
    finish();
    return EXIT_OK;
}
