/* The error path of every function of udt_capi.h, checked against UDT4 4.11's error codes:
 * an unknown handle, a closed socket, a bad option or argument, a call in the wrong state.
 * Prints "ERRORS PASS checks=<n>" and exits 0, or names the first failed check and exits 1. */

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udt_capi.h"

static int checks = 0;

#define EXPECT(call, code)                                                                              \
    do {                                                                                                \
        udt_clearlasterror();                                                                           \
        long long r_ = (long long)(call);                                                               \
        int c_ = udt_getlasterror_code();                                                               \
        checks++;                                                                                       \
        if (r_ != -1 || c_ != (code)) {                                                                 \
            fprintf(stderr, "FAIL line %d: %s returned %lld with code %d, expected -1 with code %d\n", \
                    __LINE__, #call, r_, c_, (code));                                                   \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

#define EXPECT_OK(call)                                                                                  \
    do {                                                                                                 \
        long long r_ = (long long)(call);                                                                \
        checks++;                                                                                        \
        if (r_ < 0) {                                                                                    \
            fprintf(stderr, "FAIL line %d: %s failed with code %d: %s\n", __LINE__, #call,              \
                    udt_getlasterror_code(), udt_getlasterror_desc());                                   \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

int main(void) {
    const UDTSOCKET bad = 12345;
    char buf[64] = {0};
    int len = sizeof buf, one = 1, events = UDT_EPOLL_IN;
    int64_t off = 0;
    struct sockaddr_in a = loopback(0);
    struct sockaddr* sa = (struct sockaddr*)&a;
    struct sockaddr_storage ss;
    int sslen = sizeof ss;
    CPerfMon perf;

    EXPECT_OK(udt_startup());

    /* An unknown handle: EINVSOCK (5004) everywhere. */
    EXPECT(udt_bind(bad, sa, sizeof a), UDT_ERR_INVSOCK);
    EXPECT(udt_listen(bad, 10), UDT_ERR_INVSOCK);
    EXPECT(udt_accept(bad, NULL, NULL), UDT_ERR_INVSOCK);
    EXPECT(udt_connect(bad, sa, sizeof a), UDT_ERR_INVSOCK);
    EXPECT(udt_close(bad), UDT_ERR_INVSOCK);
    EXPECT(udt_getpeername(bad, (struct sockaddr*)&ss, &sslen), UDT_ERR_INVSOCK);
    EXPECT(udt_getsockname(bad, (struct sockaddr*)&ss, &sslen), UDT_ERR_INVSOCK);
    EXPECT(udt_getsockopt(bad, 0, UDT_MSS, buf, &len), UDT_ERR_INVSOCK);
    EXPECT(udt_setsockopt(bad, 0, UDT_MSS, &one, sizeof one), UDT_ERR_INVSOCK);
    EXPECT(udt_send(bad, buf, 1, 0), UDT_ERR_INVSOCK);
    EXPECT(udt_recv(bad, buf, 1, 0), UDT_ERR_INVSOCK);
    EXPECT(udt_sendmsg(bad, buf, 1, -1, 0), UDT_ERR_INVSOCK);
    EXPECT(udt_recvmsg(bad, buf, 1), UDT_ERR_INVSOCK);
    EXPECT(udt_sendfile2(bad, "/dev/null", &off, 1, 0), UDT_ERR_INVSOCK);
    EXPECT(udt_recvfile2(bad, "/dev/null", &off, 1, 0), UDT_ERR_INVSOCK);
    EXPECT(udt_perfmon(bad, &perf, 1), UDT_ERR_INVSOCK);
    EXPECT(udt_set_key(bad, (const uint8_t*)"0123456789abcdef0123456789abcdef", 32), UDT_ERR_INVSOCK);
    EXPECT(udt_set_code(bad, "a phrase"), UDT_ERR_INVSOCK);
    if (udt_getsockstate(bad) != UDT_STATUS_NONEXIST) { fprintf(stderr, "FAIL: state of a bad handle\n"); return 1; }
    checks++;

    /* Unsupported calls and bad arguments. */
    EXPECT(udt_socket(AF_INET, 99, 0), UDT_ERR_INVPARAM);
    UDTSOCKET s = udt_socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_OK(s);
    EXPECT(udt_bind2(s, 0), UDT_ERR_INVOP);
    EXPECT(udt_setsockopt(s, 0, 99, &one, sizeof one), UDT_ERR_INVPARAM);
    EXPECT(udt_getsockopt(s, 0, 99, buf, &len), UDT_ERR_INVPARAM);
    EXPECT(udt_setsockopt(s, 0, UDT_MSS, &one, sizeof one), UDT_ERR_INVPARAM);
    EXPECT(udt_setsockopt(s, 0, UDT_CC, "no-such-controller", 18), UDT_ERR_INVPARAM);
    EXPECT(udt_bind(s, sa, 3), UDT_ERR_INVPARAM);
    EXPECT(udt_set_key(s, (const uint8_t*)"short", 5), UDT_ERR_INVPARAM);
    EXPECT(udt_set_code(s, NULL), UDT_ERR_INVPARAM);
    EXPECT(udt_perfmon(s, NULL, 1), UDT_ERR_INVPARAM);

    /* The wrong state. */
    EXPECT(udt_send(s, buf, 1, 0), UDT_ERR_NOCONN);
    EXPECT(udt_recv(s, buf, 1, 0), UDT_ERR_NOCONN);
    EXPECT(udt_getpeername(s, (struct sockaddr*)&ss, &sslen), UDT_ERR_NOCONN);
    EXPECT(udt_perfmon(s, &perf, 1), UDT_ERR_NOCONN);
    EXPECT(udt_sendmsg(s, buf, 1, -1, 0), UDT_ERR_STREAMILL);
    EXPECT(udt_recvmsg(s, buf, 1), UDT_ERR_STREAMILL);
    EXPECT(udt_listen(s, 10), UDT_ERR_UNBOUNDSOCK);
    EXPECT(udt_accept(s, NULL, NULL), UDT_ERR_NOLISTEN);
    EXPECT_OK(udt_bind(s, sa, sizeof a));
    EXPECT(udt_bind(s, sa, sizeof a), UDT_ERR_INVOP);
    EXPECT(udt_setsockopt(s, 0, UDT_MSS, &len, sizeof len), UDT_ERR_BOUNDSOCK);
    EXPECT_OK(udt_listen(s, 10));
    EXPECT(udt_connect(s, sa, sizeof a), UDT_ERR_CONNSOCK);
    EXPECT_OK(udt_setsockopt(s, 0, UDT_RCVSYN, &(char){0}, 1));
    EXPECT(udt_accept(s, NULL, NULL), UDT_ERR_ASYNCRCV);

    UDTSOCKET d = udt_socket(AF_INET, SOCK_DGRAM, 0);
    EXPECT_OK(d);
    EXPECT(udt_send(d, buf, 1, 0), UDT_ERR_DGRAMILL);
    EXPECT(udt_recv(d, buf, 1, 0), UDT_ERR_DGRAMILL);
    EXPECT(udt_sendfile2(d, "/dev/null", &off, 1, 0), UDT_ERR_DGRAMILL);
    EXPECT(udt_recvfile2(d, "/dev/null", &off, 1, 0), UDT_ERR_DGRAMILL);

    UDTSOCKET r = udt_socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_OK(udt_setsockopt(r, 0, UDT_RENDEZVOUS, &(char){1}, 1));
    EXPECT(udt_connect(r, sa, sizeof a), UDT_ERR_RDVUNBOUND);
    EXPECT_OK(udt_bind(r, sa, sizeof a));
    EXPECT(udt_listen(r, 10), UDT_ERR_RDVNOSERV);

    /* A closed socket is gone: EINVSOCK. */
    EXPECT_OK(udt_close(d));
    EXPECT(udt_close(d), UDT_ERR_INVSOCK);
    EXPECT(udt_recvmsg(d, buf, 1), UDT_ERR_INVSOCK);
    EXPECT(udt_getsockopt(d, 0, UDT_MSS, buf, &len), UDT_ERR_INVSOCK);

    /* Nobody answers: UDT4's connection time out (1001) after about 3 s. */
    UDTSOCKET c = udt_socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in closed_port = loopback(9);
    EXPECT(udt_connect(c, (struct sockaddr*)&closed_port, sizeof closed_port), UDT_ERR_NOSERVER);

    /* epoll: bad ids, bad sockets, a timeout. */
    EXPECT(udt_epoll_add_usock(777, s, &events), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_add_ssock(777, 0, &events), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_remove_usock(777, s), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_remove_ssock(777, 0), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_count(777), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_release(777), UDT_ERR_INVPOLLID);
    EXPECT(udt_epoll_wait2(777, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL), UDT_ERR_INVPOLLID);
    int eid = udt_epoll_create();
    EXPECT_OK(eid);
    EXPECT(udt_epoll_add_usock(eid, bad, &events), UDT_ERR_INVSOCK);
    EXPECT_OK(udt_epoll_add_usock(eid, s, &events));
    UDTSOCKET rd[4];
    int rn = 4;
    EXPECT(udt_epoll_wait2(eid, rd, &rn, NULL, NULL, 50, NULL, NULL, NULL, NULL), UDT_ERR_TIMEOUT);
    EXPECT_OK(udt_epoll_release(eid));

    /* select: a socket that is gone counts as readable, as in UDT4. */
    UDTSOCKET set[1] = {bad};
    int n = 1;
    if (udt_select(set, &n, NULL, NULL, NULL, NULL, 0) != 1 || n != 1 || set[0] != bad) {
        fprintf(stderr, "FAIL: select of a bad handle\n");
        return 1;
    }
    checks++;

    /* Messages: UDT4's text. */
    char text[128];
    udt_strerror(UDT_ERR_INVSOCK, 0, text, sizeof text);
    if (strcmp(text, "Operation not supported: Invalid socket ID.") != 0) {
        fprintf(stderr, "FAIL: message '%s'\n", text);
        return 1;
    }
    checks++;
    udt_setlasterror(UDT_ERR_CONNLOST, 0);
    if (strcmp(udt_getlasterror_desc(), "Connection was broken.") != 0) {
        fprintf(stderr, "FAIL: last error text '%s'\n", udt_getlasterror_desc());
        return 1;
    }
    checks++;

    EXPECT_OK(udt_close(s));
    EXPECT_OK(udt_close(r));
    EXPECT_OK(udt_cleanup());
    printf("ERRORS PASS checks=%d\n", checks);
    return 0;
}
