// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Asio.
#pragma once

#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "engine/net/net_context.h"

namespace rookery::net {

struct NetContext::Impl
{
    boost::asio::io_context ioc;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
    std::vector<std::thread> threads;
};

} // namespace rookery::net
