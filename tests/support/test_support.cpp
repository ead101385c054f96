// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/support/test_support.h"

#include <fstream>
#include <stdexcept>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <zlib.h>

namespace rookery::test {

bool waitFor(const std::function<bool()> &predicate, std::chrono::milliseconds timeout)
{
    QElapsedTimer timer;
    timer.start();
    while (!predicate()) {
        if (timer.elapsed() > timeout.count())
            return false;
        if (QCoreApplication::instance())
            QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(5);
    }
    return true;
}

std::filesystem::path fashionMnistDir()
{
    const QByteArray env = qgetenv("ROOKERY_FASHION_MNIST_DIR");
    return env.isEmpty() ? std::filesystem::path(ROOKERY_FASHION_MNIST_DIR) : std::filesystem::path(env.toStdString());
}

QString programPath(const QString &name)
{
    const QByteArray dir = qgetenv("ROOKERY_BIN_DIR");
    return (dir.isEmpty() ? QStringLiteral(".") : QString::fromLocal8Bit(dir)) + QLatin1Char('/') + name;
}

int runProgram(const QString &program, const QStringList &args, QString *out, QString *err,
               std::chrono::milliseconds timeout)
{
    QProcess p;
    p.start(program, args);
    if (!p.waitForStarted(10000))
        return -1;
    if (!p.waitForFinished(int(timeout.count()))) {
        p.kill();
        p.waitForFinished();
        return -1;
    }
    if (out)
        *out = QString::fromUtf8(p.readAllStandardOutput());
    if (err)
        *err = QString::fromUtf8(p.readAllStandardError());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

std::vector<char> readFileBytes(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void writeGzip(const std::filesystem::path &path, const std::vector<unsigned char> &bytes)
{
    gzFile f = gzopen(path.c_str(), "wb");
    if (!f)
        throw std::runtime_error("cannot write " + path.string());
    if (!bytes.empty())
        gzwrite(f, bytes.data(), unsigned(bytes.size()));
    gzclose(f);
}

uint16_t freeLoopbackPort()
{
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
    return a.local_endpoint().port();
}

} // namespace rookery::test
