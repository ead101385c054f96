// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/idle_source.h"

#include <cstdlib>
#include <ctime>

#include <dlfcn.h>
#include <systemd/sd-bus.h>
// Only for the XScreenSaverInfo layout: the libraries themselves are opened at run time.
#include <X11/extensions/scrnsaver.h>

namespace rookery::device {
namespace {

using namespace std::chrono;

class LogindIdleSource final : public IdleSource
{
public:
    explicit LogindIdleSource(sd_bus *bus)
        : m_bus(bus)
    { }
    ~LogindIdleSource() override { sd_bus_flush_close_unref(m_bus); }
    LogindIdleSource(const LogindIdleSource &) = delete;
    LogindIdleSource &operator=(const LogindIdleSource &) = delete;

    std::optional<milliseconds> idleTime() override
    {
        int hint = 0;
        if (!readProperty("IdleHint", 'b', &hint))
            return std::nullopt;
        if (!hint)
            return milliseconds(0);
        uint64_t sinceUs = 0; // CLOCK_MONOTONIC, microseconds
        if (!readProperty("IdleSinceHintMonotonic", 't', &sinceUs))
            return std::nullopt;
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        const int64_t nowUs = int64_t(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
        return duration_cast<milliseconds>(microseconds(std::max<int64_t>(0, nowUs - int64_t(sinceUs))));
    }

    std::string name() const override { return "logind IdleHint"; }

    bool readProperty(const char *property, char type, void *out)
    {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const int rc = sd_bus_get_property_trivial(m_bus, "org.freedesktop.login1", "/org/freedesktop/login1",
                                                   "org.freedesktop.login1.Manager", property, &error, type, out);
        sd_bus_error_free(&error);
        return rc >= 0;
    }

private:
    sd_bus *m_bus;
};

// The few libX11/libXss entry points we need, resolved with dlsym.
struct XApi
{
    void *x11 = nullptr;
    void *xss = nullptr;
    Display *(*openDisplay)(const char *) = nullptr;
    int (*closeDisplay)(Display *) = nullptr;
    Window (*defaultRootWindow)(Display *) = nullptr;
    int (*free)(void *) = nullptr;
    Bool (*queryExtension)(Display *, int *, int *) = nullptr;
    XScreenSaverInfo *(*allocInfo)() = nullptr;
    Status (*queryInfo)(Display *, Drawable, XScreenSaverInfo *) = nullptr;

    bool load()
    {
        x11 = dlopen("libX11.so.6", RTLD_NOW | RTLD_LOCAL);
        xss = x11 ? dlopen("libXss.so.1", RTLD_NOW | RTLD_LOCAL) : nullptr;
        if (!xss)
            return false;
        openDisplay = reinterpret_cast<decltype(openDisplay)>(dlsym(x11, "XOpenDisplay"));
        closeDisplay = reinterpret_cast<decltype(closeDisplay)>(dlsym(x11, "XCloseDisplay"));
        defaultRootWindow = reinterpret_cast<decltype(defaultRootWindow)>(dlsym(x11, "XDefaultRootWindow"));
        free = reinterpret_cast<decltype(free)>(dlsym(x11, "XFree"));
        queryExtension = reinterpret_cast<decltype(queryExtension)>(dlsym(xss, "XScreenSaverQueryExtension"));
        allocInfo = reinterpret_cast<decltype(allocInfo)>(dlsym(xss, "XScreenSaverAllocInfo"));
        queryInfo = reinterpret_cast<decltype(queryInfo)>(dlsym(xss, "XScreenSaverQueryInfo"));
        return openDisplay && closeDisplay && defaultRootWindow && free && queryExtension && allocInfo && queryInfo;
    }
    void unload()
    {
        if (xss)
            dlclose(xss);
        if (x11)
            dlclose(x11);
    }
};

class XScreenSaverIdleSource final : public IdleSource
{
public:
    XScreenSaverIdleSource(XApi api, Display *display)
        : m_api(api)
        , m_display(display)
        , m_info(api.allocInfo())
    { }
    ~XScreenSaverIdleSource() override
    {
        if (m_info)
            m_api.free(m_info);
        m_api.closeDisplay(m_display);
        m_api.unload();
    }
    XScreenSaverIdleSource(const XScreenSaverIdleSource &) = delete;
    XScreenSaverIdleSource &operator=(const XScreenSaverIdleSource &) = delete;

    std::optional<milliseconds> idleTime() override
    {
        if (!m_info || !m_api.queryInfo(m_display, m_api.defaultRootWindow(m_display), m_info))
            return std::nullopt;
        return milliseconds(m_info->idle);
    }

    std::string name() const override { return "X screensaver"; }

private:
    XApi m_api;
    Display *m_display;
    XScreenSaverInfo *m_info;
};

} // namespace

std::unique_ptr<IdleSource> makeLogindIdleSource()
{
    sd_bus *bus = nullptr;
    if (sd_bus_open_system(&bus) < 0)
        return nullptr;
    auto source = std::make_unique<LogindIdleSource>(bus);
    int hint = 0;
    if (!source->readProperty("IdleHint", 'b', &hint))
        return nullptr; // a system bus without logind (containers, other init systems)
    return source;
}

std::unique_ptr<IdleSource> makeXScreenSaverIdleSource()
{
    const char *display = std::getenv("DISPLAY");
    if (!display || !*display)
        return nullptr;
    XApi api;
    if (!api.load()) {
        api.unload();
        return nullptr;
    }
    Display *d = api.openDisplay(nullptr);
    int event = 0, error = 0;
    if (!d || !api.queryExtension(d, &event, &error)) {
        if (d)
            api.closeDisplay(d);
        api.unload();
        return nullptr;
    }
    return std::make_unique<XScreenSaverIdleSource>(api, d);
}

std::unique_ptr<IdleSource> makeSystemIdleSource()
{
    if (auto logind = makeLogindIdleSource())
        return logind;
    if (auto x = makeXScreenSaverIdleSource())
        return x;
    return nullptr;
}

} // namespace rookery::device
