#!/usr/bin/python3
"""A desktop's side of the GlobalShortcuts portal, for Hark's tests (issue 48).

The real xdg-desktop-portal (the frontend apps talk to) hands
org.freedesktop.impl.portal.GlobalShortcuts calls to the backend its `.portal` file names:
on a real desktop KDE's or GNOME's, here this one, on the same session bus. It binds what
it is asked (and assigns each shortcut the trigger "Test desktop: <preferred trigger>", so a
test can tell the desktop's words from Hark's), and a test holds a key through the private
interface org.hark.test.Shortcuts: Press and Release emit Activated and Deactivated for
every open session that bound the id, as a desktop does; Bound lists the last session's
shortcuts (id and preferred trigger).

Run with /usr/bin/python3 (Debian's python3-dbus and python3-gi)."""
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BUS_NAME = "org.freedesktop.impl.portal.desktop.hark_test"
PATH = "/org/freedesktop/portal/desktop"
IFACE = "org.freedesktop.impl.portal.GlobalShortcuts"
TEST = "org.hark.test.Shortcuts"

# session handle -> {shortcut id: (description, preferred trigger)}, in the order opened
sessions = {}


class Session(dbus.service.Object):
    """The impl.portal.Session the frontend closes when the app closes its session."""

    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.path = str(path)

    @dbus.service.method("org.freedesktop.impl.portal.Session", in_signature="", out_signature="")
    def Close(self):
        sessions.pop(self.path, None)
        self.remove_from_connection()

    @dbus.service.signal("org.freedesktop.impl.portal.Session", signature="")
    def Closed(self):
        pass


def described(bound):
    return dbus.Array(
        [
            dbus.Struct(
                (
                    sid,
                    {
                        "description": dbus.String(d, variant_level=1),
                        "trigger_description": dbus.String(f"Test desktop: {t}", variant_level=1),
                    },
                ),
                signature="sa{sv}",
            )
            for sid, (d, t) in bound.items()
        ],
        signature="(sa{sv})",
    )


class Portal(dbus.service.Object):
    @dbus.service.method(IFACE, in_signature="oosa{sv}", out_signature="ua{sv}")
    def CreateSession(self, handle, session_handle, app_id, options):
        Session(self.connection, session_handle)
        sessions[str(session_handle)] = {}
        # xdg-desktop-portal 1.16 passes results["shortcuts"] on unchecked: always send it.
        return dbus.UInt32(0), {"shortcuts": dbus.Array([], signature="(sa{sv})", variant_level=1)}

    @dbus.service.method(IFACE, in_signature="ooa(sa{sv})sa{sv}", out_signature="ua{sv}")
    def BindShortcuts(self, handle, session_handle, shortcuts, parent_window, options):
        bound = {
            str(sid): (str(info.get("description", "")), str(info.get("preferred_trigger", "")))
            for sid, info in shortcuts
        }
        sessions[str(session_handle)] = bound
        print(f"backend: bound {bound}", flush=True)
        return dbus.UInt32(0), {"shortcuts": dbus.Array(described(bound), variant_level=1)}

    @dbus.service.method(IFACE, in_signature="oo", out_signature="ua{sv}")
    def ListShortcuts(self, handle, session_handle):
        bound = sessions.get(str(session_handle), {})
        return dbus.UInt32(0), {"shortcuts": dbus.Array(described(bound), variant_level=1)}

    @dbus.service.signal(IFACE, signature="osta{sv}")
    def Activated(self, session_handle, shortcut_id, timestamp, options):
        pass

    @dbus.service.signal(IFACE, signature="osta{sv}")
    def Deactivated(self, session_handle, shortcut_id, timestamp, options):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        return dbus.UInt32(1)

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"version": dbus.UInt32(1)} if interface == IFACE else {}

    def _emit(self, signal, shortcut_id):
        n = 0
        for s, bound in sessions.items():
            if shortcut_id in bound:
                signal(dbus.ObjectPath(s), shortcut_id, dbus.UInt64(int(time.time() * 1000)), {})
                n += 1
        return dbus.UInt32(n)

    @dbus.service.method(TEST, in_signature="s", out_signature="u")
    def Press(self, shortcut_id):
        return self._emit(self.Activated, shortcut_id)

    @dbus.service.method(TEST, in_signature="s", out_signature="u")
    def Release(self, shortcut_id):
        return self._emit(self.Deactivated, shortcut_id)

    @dbus.service.method(TEST, in_signature="", out_signature="a(ss)")
    def Bound(self):
        last = list(sessions.values())[-1] if sessions else {}
        return dbus.Array([(sid, t) for sid, (_, t) in last.items()], signature="(ss)")


DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
portal = Portal(bus, PATH)
# The name is owned once the objects exist: the frontend finds them there.
name = dbus.service.BusName(BUS_NAME, bus)
print("backend: ready", flush=True)
GLib.MainLoop().run()
