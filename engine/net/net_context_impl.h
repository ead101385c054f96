// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Asio.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "engine/net/net_context.h"

namespace rookery::net {

struct NetContext::Impl
{
    explicit Impl(int threadCount)
        : threads(size_t(threadCount))
        , ioc(threadCount) // 1: Asio skips its locks and queues completions per thread
    { }

    /// An executor for one connection's I/O objects: a strand when several threads run
    /// the io_context; with one thread that thread is the strand, and a real one would
    /// only add a lock per handler.
    boost::asio::any_io_executor connectionExecutor()
    {
        if (threads.size() == 1)
            return ioc.get_executor();
        return boost::asio::make_strand(ioc);
    }

    std::vector<std::thread> threads;
    std::mutex doneMutex;
    std::condition_variable done;
    size_t threadsDone = 0; // threads whose run() returned: the io_context ran out of work
    boost::asio::io_context ioc;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
};

} // namespace rookery::net
