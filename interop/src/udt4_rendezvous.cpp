// udt4_rendezvous: UDT_RENDEZVOUS=true; binds --local PORT, prints
// READY <bound port>, connects to --peer HOST:PORT (both sides must call
// connect within UDT4's rendezvous window, about 30 s), then:
//   --role send (default): sends --bytes N of the xorshift64 stream (--seed),
//                          closes (linger), prints DONE with the hash sent;
//   --role recv:           reads until the peer closes, prints DONE with the
//                          hash received, and exits 4 if the data is not
//                          exactly the N-byte stream for --seed.
//   DONE bytes=<n> fnv1a64=<16 hex> secs=<float>
#include "common.h"

using namespace interop;

static const char* USAGE =
    "usage: udt4_rendezvous --local PORT --peer HOST:PORT --bytes N [--role send|recv] [--seed S] [--bind ADDR]\n"
    "                       [--timeout SECS] [--mss N]\n"
    "  --local PORT     local UDP port to bind (0 = any; printed as READY <port>)\n"
    "  --peer HOST:PORT the other side's bound address (IPv6 as [ADDR]:PORT)\n"
    "  --bytes N        bytes to send (send) / expected (recv)\n"
    "  --role R         send or recv, default send\n"
    "  --seed S         xorshift64 seed (non-zero), default 1\n"
    "  --bind ADDR      local address, default 127.0.0.1 (::1 if the peer is IPv6)\n" INTEROP_COMMON_USAGE;

int main(int argc, char** argv) {
    prog_name() = "udt4_rendezvous";
    Args a(argc, argv,
           {{"local", true}, {"peer", true}, {"bytes", true}, {"role", true}, {"seed", true}, {"bind", true},
            INTEROP_COMMON_OPTS},
           USAGE);
    uint16_t lport = parse_port(a, "local", a.req_str("local"));
    Addr peer = parse_hostport(a, "peer", a.req_str("peer"));
    uint64_t total = a.req_u64("bytes");
    std::string role = a.str("role", "send");
    if (role != "send" && role != "recv") a.usage_error("--role must be send or recv");
    uint64_t seed = seed_opt(a);
    Common c = init(a);

    Addr local = resolve(a.str("bind", peer.family == AF_INET6 ? "::1" : "127.0.0.1"), lport);
    if (local.family != peer.family) die("--bind and --peer address families differ");
    UDTSOCKET u = new_socket(peer.family, SOCK_STREAM, c);
    set_bool_opt(u, UDT_RENDEZVOUS, true, "setsockopt(UDT_RENDEZVOUS)");
    if (UDT::bind(u, local.sa(), local.len) == UDT::ERROR) udt_fail("UDT::bind");
    print_ready(u);
    Watchdog::kick("UDT::connect (rendezvous)");
    if (UDT::connect(u, peer.sa(), peer.len) == UDT::ERROR) udt_fail("UDT::connect (rendezvous)");
    Watchdog::kick("connected");
    fprintf(stderr, "udt4_rendezvous: connected to %s\n", addr_str(peer.sa()).c_str());
    double t0 = now_secs();

    const size_t CHUNK = 1 << 20;
    std::vector<uint8_t> buf(CHUNK), expect(CHUNK);
    XorShift64 g(seed);
    Fnv1a64 h;
    uint64_t n_done = 0;
    if (role == "send") {
        while (n_done < total) {
            size_t n = total - n_done < CHUNK ? static_cast<size_t>(total - n_done) : CHUNK;
            g.fill(buf.data(), n);
            h.update(buf.data(), n);
            send_all(u, buf.data(), n);
            n_done += n;
        }
        close_socket(u);
        print_done(n_done, h, now_secs() - t0);
    } else {
        bool mismatch = false;
        uint64_t bad_off = 0;
        for (;;) {
            int r = recv_some(u, buf.data(), static_cast<int>(CHUNK));
            if (r == 0) break;
            size_t n = static_cast<size_t>(r);
            h.update(buf.data(), n);
            if (!mismatch) {
                g.fill(expect.data(), n);
                if (memcmp(buf.data(), expect.data(), n) != 0) {
                    mismatch = true;
                    for (size_t i = 0; i < n; ++i)
                        if (buf[i] != expect[i]) {
                            bad_off = n_done + i;
                            break;
                        }
                }
            }
            n_done += n;
        }
        double secs = now_secs() - t0;
        print_done(n_done, h, secs);
        close_socket(u);
        if (mismatch) die_code(EXIT_VERIFY, "data mismatch at offset %" PRIu64, bad_off);
        if (n_done != total)
            die_code(EXIT_VERIFY, "received %" PRIu64 " bytes, expected %" PRIu64, n_done, total);
    }
    finish();
    return EXIT_OK;
}
