/* udt/udt_namespace.h: namespace UDT of UDT4 4.11 over the C API; included by udt/udt.h. */

#ifndef UDT_CAPI_NAMESPACE_H
#define UDT_CAPI_NAMESPACE_H

namespace UDT {

typedef CUDTException ERRORINFO;
typedef UDTOpt SOCKOPT;
typedef CPerfMon TRACEINFO;
typedef ud_set UDSET;

static const UDTSOCKET INVALID_SOCK = UDT_INVALID_SOCK;
#undef ERROR
static const int ERROR = UDT_ERROR;

inline int startup() { return udt_startup(); }
inline int cleanup() { return udt_cleanup(); }
inline UDTSOCKET socket(int af, int type, int protocol) { return udt_socket(af, type, protocol); }
inline int bind(UDTSOCKET u, const struct sockaddr* name, int namelen) { return udt_bind(u, name, namelen); }
inline int bind2(UDTSOCKET u, UDPSOCKET udpsock) { return udt_bind2(u, udpsock); }
inline int listen(UDTSOCKET u, int backlog) { return udt_listen(u, backlog); }
inline UDTSOCKET accept(UDTSOCKET u, struct sockaddr* addr, int* addrlen) { return udt_accept(u, addr, addrlen); }
inline int connect(UDTSOCKET u, const struct sockaddr* name, int namelen) { return udt_connect(u, name, namelen); }
inline int close(UDTSOCKET u) { return udt_close(u); }
inline int getpeername(UDTSOCKET u, struct sockaddr* name, int* namelen) { return udt_getpeername(u, name, namelen); }
inline int getsockname(UDTSOCKET u, struct sockaddr* name, int* namelen) { return udt_getsockname(u, name, namelen); }
inline int getsockopt(UDTSOCKET u, int level, SOCKOPT optname, void* optval, int* optlen) {
    return udt_getsockopt(u, level, optname, optval, optlen);
}
inline int setsockopt(UDTSOCKET u, int level, SOCKOPT optname, const void* optval, int optlen) {
    return udt_setsockopt(u, level, optname, optval, optlen);
}
inline int send(UDTSOCKET u, const char* buf, int len, int flags) { return udt_send(u, buf, len, flags); }
inline int recv(UDTSOCKET u, char* buf, int len, int flags) { return udt_recv(u, buf, len, flags); }
inline int sendmsg(UDTSOCKET u, const char* buf, int len, int ttl = -1, bool inorder = false) {
    return udt_sendmsg(u, buf, len, ttl, inorder ? 1 : 0);
}
inline int recvmsg(UDTSOCKET u, char* buf, int len) { return udt_recvmsg(u, buf, len); }

/* Send `size` bytes of `ifs` from `offset` (advanced by what was sent), `block` bytes a read. */
inline int64_t sendfile(UDTSOCKET u, std::fstream& ifs, int64_t& offset, int64_t size, int block = 364000) {
    if (size <= 0) return 0;
    if (block <= 0) block = 364000;
    ifs.seekg(static_cast<std::streamoff>(offset));
    if (ifs.fail()) {
        udt_setlasterror(UDT_ERR_INVRDOFF, 0);
        return ERROR;
    }
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(size, block)));
    int64_t left = size;
    while (left > 0) {
        std::streamsize unit = static_cast<std::streamsize>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
        ifs.read(&buf[0], unit);
        std::streamsize got = ifs.gcount();
        if (got <= 0) {
            if (ifs.eof()) break;
            udt_setlasterror(UDT_ERR_RDPERM, 0);
            return ERROR;
        }
        std::streamsize sent = 0;
        while (sent < got) {
            int r = udt_send(u, &buf[static_cast<size_t>(sent)], static_cast<int>(got - sent), 0);
            if (r < 0) return ERROR;
            sent += r;
            offset += r;
        }
        left -= got;
    }
    return size - left;
}

/* Receive `size` bytes into `ofs` at `offset` (advanced by what was received). */
inline int64_t recvfile(UDTSOCKET u, std::fstream& ofs, int64_t& offset, int64_t size, int block = 7280000) {
    if (size <= 0) return 0;
    if (block <= 0) block = 7280000;
    ofs.seekp(static_cast<std::streamoff>(offset));
    if (ofs.fail()) {
        udt_setlasterror(UDT_ERR_INVWROFF, 0);
        return ERROR;
    }
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(size, std::min(block, 1 << 20))));
    int64_t left = size;
    while (left > 0) {
        int unit = static_cast<int>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
        int r = udt_recv(u, &buf[0], unit, 0);
        if (r < 0) return ERROR;
        ofs.write(&buf[0], r);
        if (ofs.fail()) {
            udt_setlasterror(UDT_ERR_WRPERM, 0);
            return ERROR;
        }
        left -= r;
        offset += r;
    }
    return size;
}

inline int64_t sendfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block = 364000) {
    return udt_sendfile2(u, path, offset, size, block);
}
inline int64_t recvfile2(UDTSOCKET u, const char* path, int64_t* offset, int64_t size, int block = 7280000) {
    return udt_recvfile2(u, path, offset, size, block);
}

/* Fill `out` from the first `n` entries of `v` (if `out` is not null). */
template <class S>
inline void capi_fill(S* out, const std::vector<int>& v, int n) {
    if (!out) return;
    out->clear();
    out->insert(v.begin(), v.begin() + n);
}

/* Run udt_select over copies of the sets; write back the ready ones. */
inline int capi_select(std::vector<int>& r, std::vector<int>& w, std::vector<int>& e, bool want[3], int64_t ms,
                       int n[3]) {
    n[0] = want[0] ? static_cast<int>(r.size()) : 0;
    n[1] = want[1] ? static_cast<int>(w.size()) : 0;
    n[2] = want[2] ? static_cast<int>(e.size()) : 0;
    return udt_select(want[0] && n[0] ? &r[0] : NULL, &n[0], want[1] && n[1] ? &w[0] : NULL, &n[1],
                      want[2] && n[2] ? &e[0] : NULL, &n[2], ms);
}

/* Deprecated in UDT4 as here; use epoll. `nfds` is not used. */
inline int select(int nfds, UDSET* readfds, UDSET* writefds, UDSET* exceptfds, const struct timeval* timeout) {
    (void)nfds;
    std::vector<int> r, w, e;
    if (readfds) r.assign(readfds->begin(), readfds->end());
    if (writefds) w.assign(writefds->begin(), writefds->end());
    if (exceptfds) e.assign(exceptfds->begin(), exceptfds->end());
    int64_t ms = timeout ? int64_t(timeout->tv_sec) * 1000 + timeout->tv_usec / 1000 : -1;
    bool want[3] = {readfds != NULL, writefds != NULL, exceptfds != NULL};
    int n[3];
    int res = capi_select(r, w, e, want, ms, n);
    if (res < 0) return ERROR;
    capi_fill(readfds, r, n[0]);
    capi_fill(writefds, w, n[1]);
    capi_fill(exceptfds, e, n[2]);
    return res;
}

inline int selectEx(const std::vector<UDTSOCKET>& fds, std::vector<UDTSOCKET>* readfds,
                    std::vector<UDTSOCKET>* writefds, std::vector<UDTSOCKET>* exceptfds, int64_t msTimeOut) {
    std::vector<int> r(fds), w(fds), e(fds);
    bool want[3] = {readfds != NULL, writefds != NULL, exceptfds != NULL};
    int n[3];
    int res = capi_select(r, w, e, want, msTimeOut, n);
    if (res < 0) return ERROR;
    if (readfds) readfds->assign(r.begin(), r.begin() + n[0]);
    if (writefds) writefds->assign(w.begin(), w.begin() + n[1]);
    if (exceptfds) exceptfds->assign(e.begin(), e.begin() + n[2]);
    return res;
}

inline int epoll_create() { return udt_epoll_create(); }
inline int epoll_add_usock(int eid, UDTSOCKET u, const int* events = NULL) {
    return udt_epoll_add_usock(eid, u, events);
}
inline int epoll_add_ssock(int eid, SYSSOCKET s, const int* events = NULL) {
    return udt_epoll_add_ssock(eid, s, events);
}
inline int epoll_remove_usock(int eid, UDTSOCKET u) { return udt_epoll_remove_usock(eid, u); }
inline int epoll_remove_ssock(int eid, SYSSOCKET s) { return udt_epoll_remove_ssock(eid, s); }
inline int epoll_wait2(int eid, UDTSOCKET* readfds, int* rnum, UDTSOCKET* writefds, int* wnum, int64_t msTimeOut,
                       SYSSOCKET* lrfds = NULL, int* lrnum = NULL, SYSSOCKET* lwfds = NULL, int* lwnum = NULL) {
    return udt_epoll_wait2(eid, readfds, rnum, writefds, wnum, msTimeOut, lrfds, lrnum, lwfds, lwnum);
}
inline int epoll_wait(int eid, std::set<UDTSOCKET>* readfds, std::set<UDTSOCKET>* writefds, int64_t msTimeOut,
                      std::set<SYSSOCKET>* lrfds = NULL, std::set<SYSSOCKET>* lwfds = NULL) {
    int room = udt_epoll_count(eid);
    if (room < 0) return ERROR;
    std::vector<int> r(room + 1), w(room + 1), lr(room + 1), lw(room + 1);
    int n[4] = {room + 1, room + 1, room + 1, room + 1};
    int res = udt_epoll_wait2(eid, readfds ? &r[0] : NULL, &n[0], writefds ? &w[0] : NULL, &n[1], msTimeOut,
                              lrfds ? &lr[0] : NULL, &n[2], lwfds ? &lw[0] : NULL, &n[3]);
    if (res < 0) return ERROR;
    capi_fill(readfds, r, n[0]);
    capi_fill(writefds, w, n[1]);
    capi_fill(lrfds, lr, n[2]);
    capi_fill(lwfds, lw, n[3]);
    return res;
}
inline int epoll_release(int eid) { return udt_epoll_release(eid); }

inline ERRORINFO& getlasterror() { return CUDTException::last(); }
inline int getlasterror_code() { return udt_getlasterror_code(); }
inline const char* getlasterror_desc() { return udt_getlasterror_desc(); }
inline int perfmon(UDTSOCKET u, TRACEINFO* perf, bool clear = true) { return udt_perfmon(u, perf, clear ? 1 : 0); }
inline UDTSTATUS getsockstate(UDTSOCKET u) { return static_cast<UDTSTATUS>(udt_getsockstate(u)); }

}  // namespace UDT

#endif
