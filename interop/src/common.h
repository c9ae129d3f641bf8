// Shared helpers for the UDT4 interoperability peers (header only).
//
// Everything that the Rust side must reproduce is defined here and documented
// in interop/README.md:
//
//   * Data generator (stream, file, rendezvous payloads): xorshift64
//     (Marsaglia, shifts 13, 7, 17) over a 64-bit state initialised to the
//     seed S (S must be non-zero, default 1):
//         x ^= x << 13; x ^= x >> 7; x ^= x << 17; output x
//     The byte stream is the little-endian bytes of successive outputs; the
//     seed itself is never emitted. A length that is not a multiple of 8 uses
//     the first bytes of the last output. Seed 1 starts with the output
//     0x0000000040822041, i.e. bytes 41 20 82 40 00 00 00 00.
//
//   * Message payload (udt4_msg_*): message with index i (0-based) and size S
//     (S >= 4): bytes 0..3 = i as big-endian u32; bytes 4..S-1 = the first S-4
//     bytes of the generator above seeded with
//         seed_i = (i + 1) * 0x9E3779B97F4A7C15  (mod 2^64, never zero).
//
//   * Hash: 64-bit FNV-1a over the payload bytes (offset basis
//     0xcbf29ce484222325, prime 0x100000001b3), printed as 16 lowercase hex
//     digits. The hash of zero bytes is cbf29ce484222325.
//
//   * File framing (udt4_sendfile -> udt4_recvfile): the sender first sends
//     the file length as 8 bytes little-endian u64 with UDT::send, then the
//     file contents (UDT::sendfile), then closes. Nothing else.
//
// Exit codes: 0 success, 1 runtime/UDT error, 2 usage error, 3 watchdog
// timeout (no progress for --timeout seconds), 4 data verification failure.

#ifndef UDT_INTEROP_COMMON_H
#define UDT_INTEROP_COMMON_H

#include <udt/udt.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace interop {

enum ExitCode { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_TIMEOUT = 3, EXIT_VERIFY = 4 };

// UDT4 error codes (major * 1000 + minor) that we treat specially.
const int UDT_ECONNLOST = 2001;  // "Connection was broken": how recv reports the peer's close
const int UDT_ENOCONN = 2002;    // "Connection does not exist"
const int UDT_EINVSOCK = 5004;   // "Invalid socket ID" (socket already removed)
const int UDT_ETIMEOUT = 6003;   // UDT_RCVTIMEO / UDT_SNDTIMEO expired

inline const char*& prog_name() {
    static const char* name = "udt4_peer";
    return name;
}

inline void flush_all() {
    fflush(stdout);
    fflush(stderr);
}

// Terminate immediately without running static destructors (UDT's worker
// threads may still be running; exit() could crash in them and mask the code).
[[noreturn]] inline void quit(int code) {
    flush_all();
    _exit(code);
}

[[noreturn]] inline void vdie_code(int code, const char* fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "%s: ERROR: ", prog_name());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    quit(code);
}

[[noreturn]] __attribute__((format(printf, 2, 3))) inline void die_code(int code, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie_code(code, fmt, ap);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vdie_code(EXIT_ERR, fmt, ap);
}

inline int last_udt_code() { return UDT::getlasterror().getErrorCode(); }

// Report the last UDT error for the call `what` and exit 1 (3 for UDT's ETIMEOUT 6003).
[[noreturn]] inline void udt_fail(const char* what) {
    UDT::ERRORINFO& e = UDT::getlasterror();
    int code = e.getErrorCode();
    if (code == UDT_ETIMEOUT)
        die_code(EXIT_TIMEOUT, "%s failed: timeout: no progress within --timeout (UDT error code %d: %s)", what, code,
                 e.getErrorMessage());
    die_code(EXIT_ERR, "%s failed: %s (UDT error code %d)", what, e.getErrorMessage(), code);
}

inline double now_secs() {
    using namespace std::chrono;
    return duration_cast<duration<double>>(steady_clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------
// Watchdog: every blocking phase calls kick(); if no kick happens for
// `timeout` seconds (plus one second of slack so that UDT's own
// UDT_RCVTIMEO/UDT_SNDTIMEO errors normally fire first), the process prints an
// error naming the phase and exits with code 3. This bounds calls that have
// no UDT timeout: accept(), sendfile(), recvfile(), close() linger, connect().
class Watchdog {
  public:
    static void start(double timeout_secs) {
        limit() = timeout_secs + 1.0;
        kick("startup");
        std::thread([] {
            for (;;) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                double d = deadline().load();
                if (d > 0 && now_secs() > d) {
                    fflush(stdout);
                    fprintf(stderr, "%s: ERROR: timeout: no progress for %.1f s during %s\n", prog_name(),
                            limit() - 1.0, phase().load());
                    quit(EXIT_TIMEOUT);
                }
            }
        }).detach();
    }
    static void kick(const char* what) {
        phase().store(what);
        deadline().store(now_secs() + limit());
    }
    static void kick() { deadline().store(now_secs() + limit()); }
    static void disarm() { deadline().store(0); }

  private:
    static double& limit() {
        static double l = 61.0;
        return l;
    }
    static std::atomic<double>& deadline() {
        static std::atomic<double> d(0);
        return d;
    }
    static std::atomic<const char*>& phase() {
        static std::atomic<const char*> p("startup");
        return p;
    }
};

// ---------------------------------------------------------------------------
// Data generator and hash.

// xorshift64 byte stream; see the header comment for the exact definition.
class XorShift64 {
  public:
    explicit XorShift64(uint64_t seed) : s_(seed), cur_(0), left_(0) {}
    uint64_t next() {
        s_ ^= s_ << 13;
        s_ ^= s_ >> 7;
        s_ ^= s_ << 17;
        return s_;
    }
    void fill(uint8_t* p, size_t n) {
        while (n > 0 && left_ > 0) {
            *p++ = static_cast<uint8_t>(cur_);
            cur_ >>= 8;
            --left_;
            --n;
        }
        while (n >= 8) {
            uint64_t v = next();
            for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
            p += 8;
            n -= 8;
        }
        if (n > 0) {
            cur_ = next();
            left_ = 8;
            while (n > 0) {
                *p++ = static_cast<uint8_t>(cur_);
                cur_ >>= 8;
                --left_;
                --n;
            }
        }
    }

  private:
    uint64_t s_;
    uint64_t cur_;
    int left_;
};

class Fnv1a64 {
  public:
    Fnv1a64() : h_(0xcbf29ce484222325ULL) {}
    void update(const uint8_t* p, size_t n) {
        uint64_t h = h_;
        for (size_t i = 0; i < n; ++i) {
            h ^= p[i];
            h *= 0x100000001b3ULL;
        }
        h_ = h;
    }
    uint64_t value() const { return h_; }
    std::string hex() const {
        char b[17];
        snprintf(b, sizeof b, "%016" PRIx64, h_);
        return b;
    }

  private:
    uint64_t h_;
};

inline uint64_t msg_seed(uint32_t index) { return (static_cast<uint64_t>(index) + 1) * 0x9E3779B97F4A7C15ULL; }

// Build message `index` of `size` bytes (size >= 4) into buf.
inline void make_message(uint32_t index, uint8_t* buf, size_t size) {
    buf[0] = static_cast<uint8_t>(index >> 24);
    buf[1] = static_cast<uint8_t>(index >> 16);
    buf[2] = static_cast<uint8_t>(index >> 8);
    buf[3] = static_cast<uint8_t>(index);
    XorShift64 g(msg_seed(index));
    g.fill(buf + 4, size - 4);
}

// ---------------------------------------------------------------------------
// Command line parsing: --name value, --name=value, --flag.

struct OptSpec {
    const char* name;  // without leading "--"
    bool has_value;
};

class Args {
  public:
    Args(int argc, char** argv, const std::vector<OptSpec>& spec, const char* usage) : usage_(usage) {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a == "-h" || a == "--help") {
                printf("%s", usage_);
                quit(EXIT_OK);
            }
            if (a.compare(0, 2, "--") != 0) usage_error("unexpected argument '%s'", a.c_str());
            std::string name = a.substr(2), value;
            bool inline_value = false;
            size_t eq = name.find('=');
            if (eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                inline_value = true;
            }
            const OptSpec* os = nullptr;
            for (const OptSpec& s : spec)
                if (name == s.name) os = &s;
            if (!os) usage_error("unknown option '--%s'", name.c_str());
            if (os->has_value) {
                if (!inline_value) {
                    if (i + 1 >= argc) usage_error("option '--%s' needs a value", name.c_str());
                    value = argv[++i];
                }
            } else if (inline_value) {
                usage_error("option '--%s' takes no value", name.c_str());
            }
            for (auto& kv : vals_)
                if (kv.first == name) usage_error("option '--%s' given twice", name.c_str());
            vals_.push_back(std::make_pair(name, value));
        }
    }

    bool has(const char* name) const { return find(name) != nullptr; }

    std::string str(const char* name, const std::string& def) const {
        const std::string* v = find(name);
        return v ? *v : def;
    }
    std::string req_str(const char* name) const {
        const std::string* v = find(name);
        if (!v) usage_error("missing required option '--%s'", name);
        return *v;
    }
    uint64_t u64(const char* name, uint64_t def) const {
        const std::string* v = find(name);
        return v ? parse_u64(name, *v) : def;
    }
    uint64_t req_u64(const char* name) const { return parse_u64(name, req_str(name)); }
    double f64(const char* name, double def) const {
        const std::string* v = find(name);
        if (!v) return def;
        errno = 0;
        char* end = nullptr;
        double d = strtod(v->c_str(), &end);
        if (v->empty() || *end != '\0' || errno != 0 || !(d >= 0) || std::isinf(d))
            usage_error("option '--%s': '%s' is not a non-negative number", name, v->c_str());
        return d;
    }
    double req_f64(const char* name) const {
        req_str(name);
        return f64(name, 0);
    }

    [[noreturn]] __attribute__((format(printf, 2, 3))) void usage_error(const char* fmt, ...) const {
        fflush(stdout);
        fprintf(stderr, "%s: usage error: ", prog_name());
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n%s", usage_);
        quit(EXIT_USAGE);
    }

  private:
    const std::string* find(const char* name) const {
        for (auto& kv : vals_)
            if (kv.first == name) return &kv.second;
        return nullptr;
    }
    uint64_t parse_u64(const char* name, const std::string& v) const {
        errno = 0;
        char* end = nullptr;
        if (v.empty() || v[0] == '-' || v[0] == '+') usage_error("option '--%s': '%s' is not an integer", name, v.c_str());
        unsigned long long x = strtoull(v.c_str(), &end, 10);
        if (*end != '\0' || errno != 0) usage_error("option '--%s': '%s' is not an integer", name, v.c_str());
        return x;
    }

    const char* usage_;
    std::vector<std::pair<std::string, std::string>> vals_;
};

// Options every UDT peer accepts.
#define INTEROP_COMMON_OPTS {"timeout", true}, {"mss", true}
#define INTEROP_COMMON_USAGE                                                                       \
    "  --timeout SECS   bound on every blocking step (no progress for SECS -> exit 3), default 60\n" \
    "  --mss N          UDT_MSS in bytes (IP+UDP+UDT headers included), default UDT's 1500\n"

struct Common {
    double timeout = 60.0;
    int mss = 0;  // 0: library default
};

// Per-process initialisation: line-buffered stdout, UDT::startup, watchdog.
inline Common init(const Args& a) {
    Common c;
    c.timeout = a.f64("timeout", 60.0);
    if (c.timeout <= 0 || c.timeout > 86400) a.usage_error("--timeout must be in (0, 86400]");
    uint64_t mss = a.u64("mss", 0);
    if (a.has("mss") && (mss < 76 || mss > 65536)) a.usage_error("--mss must be in [76, 65536]");
    c.mss = static_cast<int>(mss);
    Watchdog::start(c.timeout);
    if (UDT::startup() == UDT::ERROR) udt_fail("UDT::startup");
    return c;
}

inline void finish() {
    Watchdog::kick("UDT::cleanup");
    UDT::cleanup();
    Watchdog::disarm();
    flush_all();
}

// ---------------------------------------------------------------------------
// Addresses.

struct Addr {
    sockaddr_storage ss;
    int len = 0;
    int family = AF_INET;
    const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
};

inline uint16_t parse_port(const Args& a, const char* opt, const std::string& s) {
    char* end = nullptr;
    errno = 0;
    unsigned long p = strtoul(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || p > 65535 || s[0] == '-' || s[0] == '+')
        a.usage_error("option '--%s': bad port '%s'", opt, s.c_str());
    return static_cast<uint16_t>(p);
}

// Resolve host (IPv4/IPv6 literal or name; IPv4 preferred, so "localhost" is 127.0.0.1).
inline Addr resolve(const std::string& host, uint16_t port) {
    addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    std::string ps = std::to_string(port);
    int rc = getaddrinfo(host.c_str(), ps.c_str(), &hints, &res);
    if (rc != 0) die("cannot resolve '%s': %s", host.c_str(), gai_strerror(rc));
    const addrinfo* pick = nullptr;
    for (const addrinfo* p = res; p; p = p->ai_next)
        if (p->ai_family == AF_INET) {
            pick = p;
            break;
        }
    if (!pick)
        for (const addrinfo* p = res; p; p = p->ai_next)
            if (p->ai_family == AF_INET6) {
                pick = p;
                break;
            }
    if (!pick) {
        freeaddrinfo(res);
        die("no IPv4/IPv6 address for '%s'", host.c_str());
    }
    Addr out;
    memset(&out.ss, 0, sizeof out.ss);
    memcpy(&out.ss, pick->ai_addr, pick->ai_addrlen);
    out.len = static_cast<int>(pick->ai_addrlen);
    out.family = pick->ai_family;
    freeaddrinfo(res);
    return out;
}

// Parse "HOST:PORT" or "[IPV6]:PORT".
inline Addr parse_hostport(const Args& a, const char* opt, const std::string& s) {
    std::string host, port;
    if (!s.empty() && s[0] == '[') {
        size_t rb = s.find(']');
        if (rb == std::string::npos || rb + 1 >= s.size() || s[rb + 1] != ':')
            a.usage_error("option '--%s': expected [IPV6]:PORT, got '%s'", opt, s.c_str());
        host = s.substr(1, rb - 1);
        port = s.substr(rb + 2);
    } else {
        size_t c = s.rfind(':');
        if (c == std::string::npos || c == 0 || s.find(':') != c)
            a.usage_error("option '--%s': expected HOST:PORT or [IPV6]:PORT, got '%s'", opt, s.c_str());
        host = s.substr(0, c);
        port = s.substr(c + 1);
    }
    return resolve(host, parse_port(a, opt, port));
}

inline std::string addr_str(const sockaddr* sa) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const sockaddr_in* s4 = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    if (sa->sa_family == AF_INET6) {
        const sockaddr_in6* s6 = reinterpret_cast<const sockaddr_in6*>(sa);
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
        port = ntohs(s6->sin6_port);
        return "[" + std::string(host) + "]:" + std::to_string(port);
    }
    return "?";
}

// ---------------------------------------------------------------------------
// Sockets.

inline void set_int_opt(UDTSOCKET u, UDT::SOCKOPT opt, int v, const char* what) {
    if (UDT::setsockopt(u, 0, opt, &v, sizeof v) == UDT::ERROR) udt_fail(what);
}

// Best effort: UDT4 refuses setsockopt() on a socket whose peer has already
// closed (ECONNLOST), which happens when a client connects and closes at once
// (e.g. 0 bytes). The next recv reports the end of stream anyway.
inline void set_int_opt_accepted(UDTSOCKET u, UDT::SOCKOPT opt, int v, const char* what) {
    if (UDT::setsockopt(u, 0, opt, &v, sizeof v) == UDT::ERROR) {
        int code = last_udt_code();
        if (code != UDT_ECONNLOST && code != UDT_ENOCONN) udt_fail(what);
    }
}

inline void set_bool_opt(UDTSOCKET u, UDT::SOCKOPT opt, bool v, const char* what) {
    if (UDT::setsockopt(u, 0, opt, &v, sizeof v) == UDT::ERROR) udt_fail(what);
}

// Timeouts and linger; valid on any socket (also after connect/accept).
inline void apply_timeouts(UDTSOCKET u, const Common& c) {
    int ms = static_cast<int>(std::ceil(c.timeout * 1000.0));
    set_int_opt(u, UDT_SNDTIMEO, ms, "setsockopt(UDT_SNDTIMEO)");
    set_int_opt(u, UDT_RCVTIMEO, ms, "setsockopt(UDT_RCVTIMEO)");
    linger lg;
    lg.l_onoff = 1;
    lg.l_linger = static_cast<int>(std::ceil(c.timeout));
    if (UDT::setsockopt(u, 0, UDT_LINGER, &lg, sizeof lg) == UDT::ERROR) udt_fail("setsockopt(UDT_LINGER)");
}

// New socket with --mss and timeouts applied (MSS must be set before connect/bind).
inline UDTSOCKET new_socket(int family, int type, const Common& c) {
    UDTSOCKET u = UDT::socket(family, type, 0);
    if (u == UDT::INVALID_SOCK) udt_fail("UDT::socket");
    if (c.mss > 0) set_int_opt(u, UDT_MSS, c.mss, "setsockopt(UDT_MSS)");
    apply_timeouts(u, c);
    return u;
}

inline int local_port(UDTSOCKET u) {
    sockaddr_storage ss;
    int len = sizeof ss;
    if (UDT::getsockname(u, reinterpret_cast<sockaddr*>(&ss), &len) == UDT::ERROR) udt_fail("UDT::getsockname");
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

inline void print_ready(UDTSOCKET u) {
    printf("READY %d\n", local_port(u));
    fflush(stdout);
}

// Bind + listen; prints READY <port>.
inline UDTSOCKET listen_on(const Args& a, const char* port_opt, bool port_required, int type, const Common& c) {
    uint16_t port = port_required ? parse_port(a, port_opt, a.req_str(port_opt))
                                  : parse_port(a, port_opt, a.str(port_opt, "0"));
    Addr bind_addr = resolve(a.str("bind", "127.0.0.1"), port);
    UDTSOCKET l = new_socket(bind_addr.family, type, c);
    if (UDT::bind(l, bind_addr.sa(), bind_addr.len) == UDT::ERROR) udt_fail("UDT::bind");
    if (UDT::listen(l, 16) == UDT::ERROR) udt_fail("UDT::listen");
    print_ready(l);
    return l;
}

inline UDTSOCKET accept_one(UDTSOCKET l, const Common& c) {
    Watchdog::kick("UDT::accept");
    sockaddr_storage peer;
    int plen = sizeof peer;
    UDTSOCKET s = UDT::accept(l, reinterpret_cast<sockaddr*>(&peer), &plen);
    if (s == UDT::INVALID_SOCK) udt_fail("UDT::accept");
    // Accepted sockets inherit the listener's options; set them again anyway
    // (best effort, see set_int_opt_accepted).
    int ms = static_cast<int>(std::ceil(c.timeout * 1000.0));
    set_int_opt_accepted(s, UDT_SNDTIMEO, ms, "setsockopt(UDT_SNDTIMEO)");
    set_int_opt_accepted(s, UDT_RCVTIMEO, ms, "setsockopt(UDT_RCVTIMEO)");
    fprintf(stderr, "%s: accepted connection from %s\n", prog_name(),
            addr_str(reinterpret_cast<sockaddr*>(&peer)).c_str());
    Watchdog::kick("connected");
    return s;
}

// Connect a socket made by new_socket() (options that must precede connect set already).
inline void connect_socket(UDTSOCKET u, const Addr& peer) {
    Watchdog::kick("UDT::connect");
    if (UDT::connect(u, peer.sa(), peer.len) == UDT::ERROR) udt_fail("UDT::connect");
    Watchdog::kick("connected");
}

inline UDTSOCKET connect_to(const Addr& peer, int type, const Common& c) {
    UDTSOCKET u = new_socket(peer.family, type, c);
    connect_socket(u, peer);
    return u;
}

inline void close_socket(UDTSOCKET u) {
    Watchdog::kick("UDT::close (linger: waiting for the peer to acknowledge all data)");
    if (UDT::close(u) == UDT::ERROR) {
        // After the peer closed, UDT4's garbage collector (once a second) reclaims a broken
        // socket that holds no unread data; a close after that finds no socket. The data was
        // all read by then (the tests compare it byte for byte), so this is not a failure.
        if (UDT::getlasterror().getErrorCode() == CUDTException::EINVSOCK) {
            fprintf(stderr, "%s: socket already reclaimed after the peer closed\n", prog_name());
        } else {
            udt_fail("UDT::close");
        }
    }
    Watchdog::kick("closed");
}

inline void send_all(UDTSOCKET u, const uint8_t* p, size_t n) {
    while (n > 0) {
        Watchdog::kick("UDT::send");
        int chunk = n > (1u << 30) ? (1 << 30) : static_cast<int>(n);
        int r = UDT::send(u, reinterpret_cast<const char*>(p), chunk, 0);
        if (r == UDT::ERROR) udt_fail("UDT::send");
        if (r <= 0) die("UDT::send made no progress (returned %d)", r);
        p += r;
        n -= static_cast<size_t>(r);
    }
}

// One UDT::recv. Returns bytes read (> 0), or 0 when the connection is gone
// (UDT4 has no orderly EOF: after the peer closes, recv drains the buffer and
// then fails with ECONNLOST 2001, or ENOCONN 2002). Once the buffer is drained,
// UDT4's garbage collector (once a second) may reclaim the broken socket before
// the next recv, which then fails with EINVSOCK 5004: the same end of stream, as
// `u` was a valid connected socket (callers check the bytes they got). Other
// errors exit.
inline int recv_some(UDTSOCKET u, uint8_t* buf, int len) {
    Watchdog::kick("UDT::recv");
    int r = UDT::recv(u, reinterpret_cast<char*>(buf), len, 0);
    if (r == UDT::ERROR) {
        int code = last_udt_code();
        if (code == UDT_ECONNLOST || code == UDT_ENOCONN || code == UDT_EINVSOCK) return 0;
        udt_fail("UDT::recv");
    }
    if (r == 0) die("UDT::recv returned 0 bytes");
    return r;
}

// Receive exactly n bytes; dies if the connection ends first.
inline void recv_exact(UDTSOCKET u, uint8_t* buf, size_t n, const char* what) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got;
        int r = recv_some(u, buf + got, want > (1u << 30) ? (1 << 30) : static_cast<int>(want));
        if (r == 0)
            die("connection closed by peer while reading %s (%zu of %zu bytes received)", what, got, n);
        got += static_cast<size_t>(r);
    }
}

// ---------------------------------------------------------------------------
// Output.

inline void print_done(uint64_t bytes, const Fnv1a64& h, double secs) {
    printf("DONE bytes=%" PRIu64 " fnv1a64=%s secs=%.6f\n", bytes, h.hex().c_str(), secs);
    fflush(stdout);
}

struct CpuTimes {
    double user, sys;
};

inline CpuTimes cpu_now() {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    CpuTimes t;
    t.user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    t.sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    return t;
}

inline uint64_t seed_opt(const Args& a) {
    uint64_t seed = a.u64("seed", 1);
    if (seed == 0) a.usage_error("--seed must be non-zero (xorshift64 has a fixed point at 0)");
    return seed;
}

}  // namespace interop

#endif
