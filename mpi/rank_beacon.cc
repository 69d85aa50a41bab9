#include "rank_beacon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

namespace fsrr::mpi {
namespace {

constexpr char goodbye_byte = 'B', ending_byte = 'E', death_byte = 'D';
constexpr int addresses_max = 16;

struct hello {
  uint64_t token;
  int32_t rank;
  int32_t pad = 0;
};

// An address of rank 0's listener: IPv6 (IPv4 as v4-mapped), or IPv4 where IPv6 is off.
union wire_address {
  sockaddr_in6 v6;
  sockaddr_in v4;
  sa_family_t family;
};

// Rank 0's addresses to try, loopback last: another node reaches one of the others, a rank of
// this node any. `v6`: the listener is IPv6 (dual-stack), else IPv4 only.
std::vector<wire_address> own_addresses(uint16_t port, bool v6) {
  std::vector<wire_address> out, loop;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      wire_address w{};
      if (i->ifa_addr->sa_family == AF_INET && !v6) {
        w.v4.sin_family = AF_INET;
        w.v4.sin_port = htons(port);
        w.v4.sin_addr = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
      } else if (i->ifa_addr->sa_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
        w.v6.sin6_family = AF_INET6;
        w.v6.sin6_port = htons(port);
        w.v6.sin6_addr.s6_addr[10] = 0xff;
        w.v6.sin6_addr.s6_addr[11] = 0xff;
        std::memcpy(&w.v6.sin6_addr.s6_addr[12], &v4->sin_addr, 4);
      } else if (i->ifa_addr->sa_family == AF_INET6 && v6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr)) continue;  // needs a scope: not portable
        w.v6.sin6_family = AF_INET6;
        w.v6.sin6_port = htons(port);
        w.v6.sin6_addr = a->sin6_addr;
      } else {
        continue;
      }
      ((i->ifa_flags & IFF_LOOPBACK) ? loop : out).push_back(w);
    }
    ::freeifaddrs(list);
  }
  out.insert(out.end(), loop.begin(), loop.end());
  if (out.size() > addresses_max) out.resize(addresses_max);
  return out;
}

void keepalive(int fd) {
  const int on = 1, idle = 5, interval = 1, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

// A connected socket to `a` within `timeout_ms`, or -1.
int connect_to(wire_address a, int timeout_ms) {
  bool v6 = a.family == AF_INET6;
  if (!v6 && a.family != AF_INET) return -1;
  int fd = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 && v6 && IN6_IS_ADDR_V4MAPPED(&a.v6.sin6_addr)) {  // IPv6 off on this node
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = a.v6.sin6_port;
    std::memcpy(&v4.sin_addr, &a.v6.sin6_addr.s6_addr[12], 4);
    a.v4 = v4;
    v6 = false;
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  }
  if (fd < 0) return -1;
  const socklen_t len = v6 ? sizeof a.v6 : sizeof a.v4;
  if (::connect(fd, v6 ? reinterpret_cast<const sockaddr*>(&a.v6)
                       : reinterpret_cast<const sockaddr*>(&a.v4),
                len) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (errno != EINPROGRESS || ::poll(&p, 1, timeout_ms) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return -1;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  keepalive(fd);
  return fd;
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const char*>(p);
  while (n) {
    const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

rank_beacon rank_beacon::open(MPI_Comm comm, int rank, int size) {
  rank_beacon b;
  b.linked_.assign(static_cast<size_t>(size), false);
  b.fds_.assign(static_cast<size_t>(size), -1);
  int listener = -1;
  std::vector<wire_address> where(addresses_max);
  int count = 0;
  uint64_t token = 0;
  if (rank == 0 && size > 1) {
    if (::getrandom(&token, sizeof token, 0) != static_cast<ssize_t>(sizeof token))
      token = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
              static_cast<uint64_t>(::getpid()) << 32;
    // IPv6 and IPv4 on one socket; IPv4 alone where IPv6 is off (ipv6.disable=1)
    const int off = 0;
    wire_address any{};
    socklen_t len = sizeof any.v6;
    listener = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listener >= 0 &&
              ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) == 0;
    if (v6) {
      any.v6.sin6_family = AF_INET6;
      any.v6.sin6_addr = in6addr_any;
    } else {
      if (listener >= 0) ::close(listener);
      listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      any.v4.sin_family = AF_INET;
      any.v4.sin_addr.s_addr = htonl(INADDR_ANY);
      len = sizeof any.v4;
    }
    auto* sa = v6 ? reinterpret_cast<sockaddr*>(&any.v6) : reinterpret_cast<sockaddr*>(&any.v4);
    if (listener >= 0 && ::bind(listener, sa, len) == 0 && ::listen(listener, SOMAXCONN) == 0 &&
        ::getsockname(listener, sa, &len) == 0) {
      const auto own = own_addresses(ntohs(v6 ? any.v6.sin6_port : any.v4.sin_port), v6);
      count = static_cast<int>(own.size());
      std::copy(own.begin(), own.end(), where.begin());
    }
  }
  MPI_Bcast(&count, 1, MPI_INT, 0, comm);
  MPI_Bcast(&token, 1, MPI_UINT64_T, 0, comm);
  MPI_Bcast(where.data(), static_cast<int>(sizeof(wire_address) * addresses_max), MPI_BYTE, 0,
            comm);
  // Rank 0 takes the connections as they come (many ranks would overrun a listen backlog),
  // each with a hello of this job's token and a rank not yet linked, read within a second: a
  // stray connection is closed, never waited for.
  std::atomic<bool> done{false};
  std::atomic<size_t> taken{0};
  std::thread taker;
  if (rank == 0 && listener >= 0)
    taker = std::thread([&] {
      while (!done.load()) {
        pollfd p{listener, POLLIN, 0};
        if (::poll(&p, 1, 20) != 1) continue;
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        const timeval second{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
        hello h{};
        if (::recv(fd, &h, sizeof h, MSG_WAITALL) == sizeof h && h.token == token &&
            h.rank > 0 && h.rank < size && b.fds_[static_cast<size_t>(h.rank)] < 0) {
          const timeval forever{0, 0};
          ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
          keepalive(fd);
          b.fds_[static_cast<size_t>(h.rank)] = fd;  // read by the main thread after the join
          taken.fetch_add(1);
        } else {
          ::close(fd);
        }
      }
    });
  uint8_t mine = 0;
  if (rank != 0)
    for (int i = 0; i < count && b.own_ < 0; ++i) {
      const int fd = connect_to(where[static_cast<size_t>(i)], 500);
      const hello h{token, rank};
      if (fd >= 0 && write_all(fd, &h, sizeof h))
        b.own_ = fd, mine = 1;
      else if (fd >= 0)
        ::close(fd);
    }
  std::vector<uint8_t> all(static_cast<size_t>(size));
  MPI_Allgather(&mine, 1, MPI_BYTE, all.data(), 1, MPI_BYTE, comm);
  if (rank == 0 && listener >= 0) {
    size_t want = 0;
    for (const uint8_t x : all) want += x;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (taken.load() >= want) break;
    }
    done.store(true);
    taker.join();
    ::close(listener);
  }
  // Linked: rank 0 holds its connection. Said to all, so that a node's watch leaves it to 0.
  std::vector<uint8_t> held(static_cast<size_t>(size), 0);
  if (rank == 0)
    for (int r = 1; r < size; ++r) held[static_cast<size_t>(r)] = b.fds_[static_cast<size_t>(r)] >= 0;
  MPI_Bcast(held.data(), size, MPI_BYTE, 0, comm);
  for (int r = 0; r < size; ++r) b.linked_[static_cast<size_t>(r)] = held[static_cast<size_t>(r)];
  return b;
}

rank_beacon::rank_beacon(rank_beacon&& o) noexcept
    : linked_(std::move(o.linked_)),
      fds_(std::exchange(o.fds_, {})),
      own_(std::exchange(o.own_, -1)),
      said_(o.said_.load()) {}

rank_beacon& rank_beacon::operator=(rank_beacon&& o) noexcept {
  if (this != &o) {
    this->~rank_beacon();
    new (this) rank_beacon(std::move(o));
  }
  return *this;
}

rank_beacon::~rank_beacon() {
  for (const int fd : fds_)
    if (fd >= 0) ::close(fd);
  if (own_ >= 0) ::close(own_);
}

void rank_beacon::say(const std::string& what) {
  if (own_ < 0 || said_.exchange(true)) return;
  write_all(own_, what.data(), what.size());
}

void rank_beacon::goodbye() { say(std::string(1, goodbye_byte)); }
void rank_beacon::ending() { say(std::string(1, ending_byte)); }
void rank_beacon::saw_death(int rank) {
  std::string m(1, death_byte);
  const int32_t r = rank;
  m.append(reinterpret_cast<const char*>(&r), sizeof r);
  say(m);
}

rank_beacon::news rank_beacon::read(int fd, std::string& pending) {
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return {};
  if (n < 0 && errno == ETIMEDOUT) return {news::unreachable};
  if (n <= 0) return {news::died};
  pending.append(buf, static_cast<size_t>(n));
  // A rank says one word, and goes: the first complete one is it.
  switch (pending[0]) {
    case goodbye_byte:
      return {news::left};
    case ending_byte:
      return {news::ending};
    case death_byte: {
      if (pending.size() < 1 + sizeof(int32_t)) return {};
      int32_t r = -1;
      std::memcpy(&r, pending.data() + 1, sizeof r);
      return {news::saw_death, r};
    }
    default:
      return {news::died};  // not a word of ours: taken for the end it will be
  }
}

}  // namespace fsrr::mpi
