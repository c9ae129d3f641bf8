// The UDT4 C++ calls the interoperability programs do not make, against our library on both
// ends: epoll (UDT and system sockets), select, selectEx, non-blocking receive, options and
// states of a connected socket, sendfile2/recvfile2, sendmsg, perfmon, UDT_CC by name,
// CUDTException, and a secured connection (udt_set_key). Prints "API PASS checks=<n>" and
// exits 0, or names the first failed check and exits 1.

#include <udt/udt.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

static int checks = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL line %d: %s (last UDT error %d: %s)\n", __LINE__, #cond,        \
                    UDT::getlasterror().getErrorCode(), UDT::getlasterror().getErrorMessage());    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static sockaddr_in loopback(int port) {
    sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<unsigned short>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int port_of(UDTSOCKET u) {
    sockaddr_in a;
    int len = sizeof a;
    CHECK(UDT::getsockname(u, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    return ntohs(a.sin_port);
}

// A listener of `type` on a free port, a client connected to it and the accepted socket.
static void connected_pair(int type, UDTSOCKET& listener, UDTSOCKET& client, UDTSOCKET& server, const char* key) {
    listener = UDT::socket(AF_INET, type, 0);
    CHECK(listener != UDT::INVALID_SOCK);
    if (key) CHECK(udt_set_key(listener, reinterpret_cast<const uint8_t*>(key), 32) == 0);
    sockaddr_in a = loopback(0);
    CHECK(UDT::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    CHECK(UDT::listen(listener, 10) == 0);
    CHECK(UDT::getsockstate(listener) == LISTENING);
    client = UDT::socket(AF_INET, type, 0);
    if (key) CHECK(udt_set_key(client, reinterpret_cast<const uint8_t*>(key), 32) == 0);
    a = loopback(port_of(listener));
    if (!key) {
        // The listener is readable once a connection waits for accept.
        int eid = UDT::epoll_create();
        int in = UDT_EPOLL_IN;
        CHECK(UDT::epoll_add_usock(eid, listener, &in) == 0);
        CHECK(UDT::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        std::set<UDTSOCKET> readable;
        CHECK(UDT::epoll_wait(eid, &readable, NULL, 5000) >= 1);
        CHECK(readable.count(listener) == 1);
        CHECK(UDT::epoll_release(eid) == 0);
        server = UDT::accept(listener, NULL, NULL);
    } else {
        // A secured connect completes its key agreement with the accepting side.
        std::thread t([&] { server = UDT::accept(listener, NULL, NULL); });
        CHECK(UDT::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        t.join();
    }
    CHECK(server != UDT::INVALID_SOCK);
    CHECK(UDT::getsockstate(server) == CONNECTED);
}

int main() {
    CHECK(UDT::startup() == 0);
    UDTSOCKET l, c, s;
    connected_pair(SOCK_STREAM, l, c, s, NULL);

    // Options and states of a connected socket.
    int v = 0, len = sizeof v;
    CHECK(UDT::getsockopt(c, 0, UDT_MSS, &v, &len) == 0 && v == 1500 && len == 4);
    int32_t state = 0;
    len = sizeof state;
    CHECK(UDT::getsockopt(s, 0, UDT_STATE, &state, &len) == 0 && state == CONNECTED);
    linger lg;
    len = sizeof lg;
    CHECK(UDT::getsockopt(c, 0, UDT_LINGER, &lg, &len) == 0 && lg.l_onoff == 1 && lg.l_linger == 180);
    CHECK(UDT::setsockopt(c, 0, UDT_MSS, &v, sizeof v) == UDT::ERROR);
    CHECK(UDT::getlasterror().getErrorCode() == CUDTException::ECONNSOCK);
    UDT::getlasterror().clear();
    CHECK(UDT::getlasterror_code() == 0);
    sockaddr_in peer;
    len = sizeof peer;
    CHECK(UDT::getpeername(s, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && ntohs(peer.sin_port) == port_of(c));

    // Non-blocking receive with nothing to read.
    bool off = false;
    CHECK(UDT::setsockopt(s, 0, UDT_RCVSYN, &off, sizeof off) == 0);
    char buf[4096];
    CHECK(UDT::recv(s, buf, sizeof buf, 0) == UDT::ERROR);
    CHECK(UDT::getlasterror().getErrorCode() == CUDTException::EASYNCRCV);

    // epoll over the accepted socket and a system socket; select and selectEx.
    int eid = UDT::epoll_create();
    int in = UDT_EPOLL_IN;
    CHECK(UDT::epoll_add_usock(eid, s, &in) == 0);
    std::set<UDTSOCKET> r, w;
    std::set<SYSSOCKET> lr;
    CHECK(UDT::epoll_wait(eid, &r, &w, 50) == UDT::ERROR);
    CHECK(UDT::getlasterror().getErrorCode() == CUDTException::ETIMEOUT);
    CHECK(UDT::send(c, "hello", 5, 0) == 5);
    CHECK(UDT::epoll_wait(eid, &r, NULL, 5000) == 1 && r.count(s) == 1);
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    CHECK(UDT::epoll_add_ssock(eid, fds[0], &in) == 0);
    CHECK(write(fds[1], "x", 1) == 1);
    CHECK(UDT::epoll_wait(eid, &r, NULL, 5000, &lr) == 2 && r.count(s) == 1 && lr.count(fds[0]) == 1);
    CHECK(UDT::epoll_remove_ssock(eid, fds[0]) == 0 && UDT::epoll_remove_usock(eid, s) == 0);
    CHECK(UDT::epoll_release(eid) == 0);
    int32_t ready = 0;
    len = sizeof ready;
    CHECK(UDT::getsockopt(s, 0, UDT_RCVDATA, &ready, &len) == 0 && ready == 5);
    UDT::UDSET rs;
    UD_SET(s, &rs);
    UD_SET(c, &rs);
    timeval tv = {1, 0};
    CHECK(UDT::select(0, &rs, NULL, NULL, &tv) == 1 && UD_ISSET(s, &rs) && !UD_ISSET(c, &rs));
    std::vector<UDTSOCKET> all, readable, writable;
    all.push_back(s);
    all.push_back(c);
    CHECK(UDT::selectEx(all, &readable, &writable, NULL, 1000) >= 3);
    CHECK(readable.size() == 1 && readable[0] == s && writable.size() == 2);
    CHECK(UDT::recv(s, buf, sizeof buf, 0) == 5 && memcmp(buf, "hello", 5) == 0);
    bool on = true;
    CHECK(UDT::setsockopt(s, 0, UDT_RCVSYN, &on, sizeof on) == 0);

    // Files by path.
    std::string src = "/tmp/udt-capi-api-src." + std::to_string(getpid());
    std::string dst = "/tmp/udt-capi-api-dst." + std::to_string(getpid());
    FILE* f = fopen(src.c_str(), "wb");
    for (int i = 0; i < 300000; ++i) fputc(i % 253, f);
    fclose(f);
    int64_t so = 0, ro = 0;
    CHECK(UDT::sendfile2(c, src.c_str(), &so, 300000) == 300000 && so == 300000);
    CHECK(UDT::recvfile2(s, dst.c_str(), &ro, 300000) == 300000 && ro == 300000);
    CHECK(system(("cmp -s " + src + " " + dst).c_str()) == 0);
    remove(src.c_str());
    remove(dst.c_str());

    UDT::TRACEINFO perf;
    CHECK(UDT::perfmon(c, &perf) == 0 && perf.pktSentTotal >= 200 && perf.msRTT > 0);
    CHECK(UDT::close(c) == 0 && UDT::close(s) == 0 && UDT::close(l) == 0);
    CHECK(UDT::getsockstate(c) == NONEXIST);

    // Messages, with the congestion control chosen by name.
    UDTSOCKET ml = UDT::socket(AF_INET, SOCK_DGRAM, 0);
    const char* cc = "cubic";
    CHECK(UDT::setsockopt(ml, 0, UDT_CC, cc, static_cast<int>(strlen(cc))) == 0);
    char name[32] = {0};
    len = sizeof name;
    CHECK(UDT::getsockopt(ml, 0, UDT_CC, name, &len) == 0 && std::string(name).find("cubic") != std::string::npos);
    CHECK(UDT::close(ml) == 0);
    UDTSOCKET mc, ms;
    connected_pair(SOCK_DGRAM, ml, mc, ms, NULL);
    CHECK(UDT::sendmsg(mc, "one message", 11, -1, true) == 11);
    CHECK(UDT::sendmsg(mc, "two", 3) == 3);
    CHECK(UDT::recvmsg(ms, buf, sizeof buf) == 11 && memcmp(buf, "one message", 11) == 0);
    CHECK(UDT::recvmsg(ms, buf, 2) == 2 && memcmp(buf, "tw", 2) == 0);  // cut, as UDT4
    CHECK(UDT::close(mc) == 0);
    CHECK(UDT::recvmsg(ms, buf, sizeof buf) == UDT::ERROR);
    CHECK(UDT::getlasterror().getErrorCode() == CUDTException::ECONNLOST);
    CHECK(UDT::close(ms) == 0 && UDT::close(ml) == 0);

    // A secured connection: both ends hold the same key.
    const char* key = "0123456789abcdef0123456789abcdef";
    UDTSOCKET sl, sc, ss;
    connected_pair(SOCK_STREAM, sl, sc, ss, key);
    CHECK(UDT::send(sc, "sealed", 6, 0) == 6);
    CHECK(UDT::recv(ss, buf, sizeof buf, 0) == 6 && memcmp(buf, "sealed", 6) == 0);
    CHECK(UDT::close(sc) == 0 && UDT::close(ss) == 0 && UDT::close(sl) == 0);

    CHECK(UDT::cleanup() == 0);
    printf("API PASS checks=%d\n", checks);
    return 0;
}
