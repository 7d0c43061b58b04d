//===- AsyncRuntime.cpp - the async runtime of CPU executables ------------===//
//
// MLIR's async runtime ABI (mlir/ExecutionEngine/AsyncRuntime.h), which the
// CPU pipeline's async-parallel-for lowers tiles onto, implemented for
// fork-join kernels. Upstream's reference runtime parks its workers on a
// condition variable and has the caller of a parallel loop sleep until the
// last task ends: each parallel loop pays thread wake-ups (tens of
// microseconds apiece on a VM), and the caller's core idles while tasks wait
// for a worker. Here idle threads poll for a while before they sleep, and a
// thread that blocks on a token, value or group runs queued tasks meanwhile,
// so the caller of a parallel loop is one of its workers.
//
//===----------------------------------------------------------------------===//

#include "python/runtime/AsyncRuntime.h"
#include "python/runtime/BufferCache.h"

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSEL_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define TESSEL_PAUSE() asm volatile("yield")
#else
#define TESSEL_PAUSE()
#endif

namespace {

using CoroHandle = void *;
using CoroResume = void (*)(void *);

struct Task {
  CoroHandle handle;
  CoroResume resume;
};

/// How long an idle thread polls for work before it sleeps: long enough to
/// span the serial code between the parallel loops of a call and between
/// calls from Python (tens of microseconds), short enough that an idle
/// process soon stops using CPU.
constexpr std::chrono::microseconds kPoll(200);

/// A FIFO of tasks, served by as many threads as the process may use: the
/// workers, one fewer than that, and any thread that blocks in an await.
class Scheduler {
public:
  void submit(Task task) {
    std::call_once(started, [this] { start(); });
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back(task);
      queued.fetch_add(1, std::memory_order_release);
    }
    if (sleepers.load(std::memory_order_acquire) > 0)
      wake.notify_one();
  }

  /// Runs queued tasks until `done()`. In between it sleeps on `cv`, which
  /// is notified under `doneMu` when `done()` turns true; the sleep is
  /// bounded, so that a task queued meanwhile never waits for the workers
  /// alone.
  template <typename Done>
  void helpUntil(std::mutex &doneMu, std::condition_variable &cv, Done done) {
    serve(done, [&] {
      std::unique_lock<std::mutex> lock(doneMu);
      cv.wait_for(lock, std::chrono::milliseconds(1), done);
    });
  }

  int64_t threads() {
    std::call_once(started, [this] { start(); });
    return static_cast<int64_t>(workers) + 1;
  }

  /// A forked child has none of its parent's threads and must not inherit
  /// a lock another thread held at the fork: it starts afresh.
  void forgetThreads() {
    new (&mu) std::mutex();
    new (&wake) std::condition_variable();
    new (&queue) std::deque<Task>();
    new (&started) std::once_flag();
    queued.store(0);
    sleepers.store(0);
    workers = 0;
  }

private:
  void start() {
    unsigned cores = std::thread::hardware_concurrency();
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      cores = CPU_COUNT(&set);
    // On one core the caller runs every task: a worker would only take
    // turns with it, and poll its time away.
    workers = cores > 1 ? cores - 1 : 0;
    // Detached: the process may exit while they sleep or poll, and they
    // run no JIT code but their tasks.
    for (unsigned i = 0; i < workers; ++i)
      std::thread([this] {
        serve([] { return false; }, [this] {
          std::unique_lock<std::mutex> lock(mu);
          sleepers.fetch_add(1, std::memory_order_acq_rel);
          wake.wait(lock, [this] { return !queue.empty(); });
          sleepers.fetch_sub(1, std::memory_order_acq_rel);
        });
      }).detach();
  }

  /// Runs one queued task, if there is one.
  bool runOne() {
    if (queued.load(std::memory_order_acquire) == 0)
      return false;
    Task task;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (queue.empty())
        return false;
      task = queue.front();
      queue.pop_front();
      queued.fetch_sub(1, std::memory_order_relaxed);
    }
    task.resume(task.handle);
    return true;
  }

  /// Runs tasks until `done()`, polling for `kPoll` after the last one;
  /// then it calls `sleep()` between polls.
  template <typename Done, typename Sleep>
  void serve(Done done, Sleep sleep) {
    auto idleSince = std::chrono::steady_clock::now();
    while (!done()) {
      if (runOne()) {
        idleSince = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - idleSince < kPoll) {
        TESSEL_PAUSE();
      } else {
        sleep();
      }
    }
  }

  std::mutex mu;
  std::condition_variable wake;
  std::deque<Task> queue;
  std::atomic<int64_t> queued{0};
  std::atomic<int> sleepers{0};
  std::once_flag started;
  unsigned workers = 0;
};

/// Never destroyed: detached workers may still poll it while the process
/// exits.
Scheduler &scheduler() {
  static Scheduler *instance = [] {
    pthread_atfork(nullptr, nullptr, [] { scheduler().forgetThreads(); });
    return new Scheduler();
  }();
  return *instance;
}

/// Tokens, values and groups: the ABI passes them as opaque pointers to
/// this base and counts references explicitly.
class RefCounted {
public:
  explicit RefCounted(int64_t count) : refs(count) {}
  virtual ~RefCounted() = default;
  void addRef(int64_t count) {
    refs.fetch_add(count, std::memory_order_relaxed);
  }
  void dropRef(int64_t count) {
    if (refs.fetch_sub(count, std::memory_order_acq_rel) == count)
      delete this;
  }

private:
  std::atomic<int64_t> refs;
};

/// Something to wait for: blocked threads and continuations are released
/// once it turns ready, which it does once.
class Waitable : public RefCounted {
public:
  using RefCounted::RefCounted;
  virtual bool ready() const = 0;

  /// Runs `next` now if ready, else once it is.
  void then(std::function<void()> next) {
    std::unique_lock<std::mutex> lock(mu);
    if (ready()) {
      lock.unlock();
      next();
      return;
    }
    continuations.push_back(std::move(next));
  }

  void await() {
    scheduler().helpUntil(mu, cv, [this] { return ready(); });
  }

protected:
  /// Calls `turn` under the lock; if it made this ready, releases what
  /// waits.
  template <typename Turn>
  void release(Turn turn) {
    std::vector<std::function<void()>> next;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!turn())
        return;
      next.swap(continuations);
    }
    cv.notify_all();
    for (auto &run : next)
      run();
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> continuations;
};

enum class State : int8_t { Unavailable, Available, Error };

/// A token, or a value with its storage. Created with two references: the
/// creator's, and the task's, which emplacing it (or setting an error)
/// drops.
class Token : public Waitable {
public:
  explicit Token(int64_t size = 0)
      : Waitable(2), storage(static_cast<size_t>(size)) {}
  bool ready() const override {
    return state.load(std::memory_order_acquire) != State::Unavailable;
  }
  bool error() const {
    return state.load(std::memory_order_acquire) == State::Error;
  }
  void set(State terminal) {
    release([&] {
      assert(!ready() && "an async token or value is set twice");
      state.store(terminal, std::memory_order_release);
      return true;
    });
    dropRef(1);
  }
  void *data() { return storage.data(); }

private:
  std::atomic<State> state{State::Unavailable};
  std::vector<std::byte> storage;
};

/// Ready once the `size` tokens added to it are.
class Group : public Waitable {
public:
  explicit Group(int64_t size) : Waitable(1), pending(size) {}
  bool ready() const override {
    return pending.load(std::memory_order_acquire) == 0;
  }
  bool error() const { return errors.load() > 0; }
  int64_t add(Token *token) {
    int64_t rank = next.fetch_add(1, std::memory_order_relaxed);
    // This group must outlive the token's report to it.
    addRef(1);
    token->then([this, token] {
      if (token->error())
        errors.fetch_add(1, std::memory_order_relaxed);
      release([this] {
        assert(pending.load() > 0 && "more tokens than the group's size");
        return pending.fetch_sub(1, std::memory_order_acq_rel) == 1;
      });
      dropRef(1);
    });
    return rank;
  }

private:
  std::atomic<int64_t> pending;
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> next{0};
};

Token *token(void *object) {
  return static_cast<Token *>(static_cast<RefCounted *>(object));
}

Group *group(void *object) {
  return static_cast<Group *>(static_cast<RefCounted *>(object));
}

std::function<void()> resumption(CoroHandle handle, CoroResume resume) {
  return [handle, resume] { resume(handle); };
}

// The ABI's entry points. Tokens and values share one class: the lowering
// never mixes them up, and a value is a token with storage.

void mlirAsyncRuntimeAddRef(void *object, int64_t count) {
  static_cast<RefCounted *>(object)->addRef(count);
}

void mlirAsyncRuntimeDropRef(void *object, int64_t count) {
  static_cast<RefCounted *>(object)->dropRef(count);
}

void *mlirAsyncRuntimeCreateToken() {
  return static_cast<RefCounted *>(new Token());
}

void *mlirAsyncRuntimeCreateValue(int64_t size) {
  return static_cast<RefCounted *>(new Token(size));
}

void *mlirAsyncRuntimeCreateGroup(int64_t size) {
  return static_cast<RefCounted *>(new Group(size));
}

int64_t mlirAsyncRuntimeAddTokenToGroup(void *added, void *into) {
  return group(into)->add(token(added));
}

void mlirAsyncRuntimeEmplaceToken(void *object) {
  token(object)->set(State::Available);
}

void mlirAsyncRuntimeSetTokenError(void *object) {
  token(object)->set(State::Error);
}

bool mlirAsyncRuntimeIsTokenError(void *object) {
  return token(object)->error();
}

bool mlirAsyncRuntimeIsGroupError(void *object) {
  return group(object)->error();
}

void mlirAsyncRuntimeAwaitToken(void *object) { token(object)->await(); }

void mlirAsyncRuntimeAwaitAllInGroup(void *object) { group(object)->await(); }

void *mlirAsyncRuntimeGetValueStorage(void *object) {
  return token(object)->data();
}

void mlirAsyncRuntimeExecute(CoroHandle handle, CoroResume resume) {
  scheduler().submit({handle, resume});
}

void mlirAsyncRuntimeAwaitTokenAndExecute(void *object, CoroHandle handle,
                                          CoroResume resume) {
  token(object)->then(resumption(handle, resume));
}

void mlirAsyncRuntimeAwaitAllInGroupAndExecute(void *object,
                                               CoroHandle handle,
                                               CoroResume resume) {
  group(object)->then(resumption(handle, resume));
}

int64_t mlirAsyncRuntimGetNumWorkerThreads() { return scheduler().threads(); }

} // namespace

const TesselRuntimeSymbol *tesselAsyncRuntimeSymbols() {
#define SYMBOL(name, function)                                                 \
  { #name, reinterpret_cast<void *>(&function) }
  static const TesselRuntimeSymbol symbols[] = {
      SYMBOL(mlirAsyncRuntimeAddRef, mlirAsyncRuntimeAddRef),
      SYMBOL(mlirAsyncRuntimeDropRef, mlirAsyncRuntimeDropRef),
      SYMBOL(mlirAsyncRuntimeCreateToken, mlirAsyncRuntimeCreateToken),
      SYMBOL(mlirAsyncRuntimeCreateValue, mlirAsyncRuntimeCreateValue),
      SYMBOL(mlirAsyncRuntimeCreateGroup, mlirAsyncRuntimeCreateGroup),
      SYMBOL(mlirAsyncRuntimeAddTokenToGroup, mlirAsyncRuntimeAddTokenToGroup),
      SYMBOL(mlirAsyncRuntimeEmplaceToken, mlirAsyncRuntimeEmplaceToken),
      SYMBOL(mlirAsyncRuntimeEmplaceValue, mlirAsyncRuntimeEmplaceToken),
      SYMBOL(mlirAsyncRuntimeSetTokenError, mlirAsyncRuntimeSetTokenError),
      SYMBOL(mlirAsyncRuntimeSetValueError, mlirAsyncRuntimeSetTokenError),
      SYMBOL(mlirAsyncRuntimeIsTokenError, mlirAsyncRuntimeIsTokenError),
      SYMBOL(mlirAsyncRuntimeIsValueError, mlirAsyncRuntimeIsTokenError),
      SYMBOL(mlirAsyncRuntimeIsGroupError, mlirAsyncRuntimeIsGroupError),
      SYMBOL(mlirAsyncRuntimeAwaitToken, mlirAsyncRuntimeAwaitToken),
      SYMBOL(mlirAsyncRuntimeAwaitValue, mlirAsyncRuntimeAwaitToken),
      SYMBOL(mlirAsyncRuntimeAwaitAllInGroup, mlirAsyncRuntimeAwaitAllInGroup),
      SYMBOL(mlirAsyncRuntimeGetValueStorage, mlirAsyncRuntimeGetValueStorage),
      SYMBOL(mlirAsyncRuntimeExecute, mlirAsyncRuntimeExecute),
      SYMBOL(mlirAsyncRuntimeAwaitTokenAndExecute,
             mlirAsyncRuntimeAwaitTokenAndExecute),
      SYMBOL(mlirAsyncRuntimeAwaitValueAndExecute,
             mlirAsyncRuntimeAwaitTokenAndExecute),
      SYMBOL(mlirAsyncRuntimeAwaitAllInGroupAndExecute,
             mlirAsyncRuntimeAwaitAllInGroupAndExecute),
      // Misspelt upstream, and so in every lowering that calls it.
      SYMBOL(mlirAsyncRuntimGetNumWorkerThreads,
             mlirAsyncRuntimGetNumWorkerThreads),
      // The compiled code's heap (BufferCache.cpp).
      SYMBOL(malloc, tesselMalloc),
      SYMBOL(calloc, tesselCalloc),
      SYMBOL(aligned_alloc, tesselAlignedAlloc),
      SYMBOL(free, tesselFree),
      {nullptr, nullptr}};
#undef SYMBOL
  return symbols;
}
