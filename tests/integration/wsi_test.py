#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""WSI tests: windowed programs through a private gpud, on X11 (a private
Xvfb) and Wayland (a private Weston, headless backend).

Usage: as gpud_test.py (same options), with one of these subcommands:

  wsi-x11      vk_wsi (tests/integration/vk_wsi.c) on xcb and Xlib windows:
               the pixels shown equal the pattern it drew (X11 screenshots
               by xwd), on the MIT-SHM + Present path and on both fallbacks;
               present-mode pacing, acquire time-outs, present waits,
               resize (OUT_OF_DATE and a new swapchain), a destroyed window
               (SURFACE_LOST), two windowed clients at once, and the daemon
               killed mid-frame and not back within its restart grace
               (DEVICE_LOST within 2 s of it).
  wsi-wayland  vk_wsi on a Wayland surface and a headless one; vkcube-wayland:
               frames, and its screenshot equals lavapipe's.
  wsi-apps     third-party programs under Xvfb: vkcube and vkcubepp (100
               frames, exit 0; a frame's screenshot equals lavapipe's),
               GStreamer's vulkansink, vkd3d-gears (Direct3D 12), and
               OpenGL through Zink: glxinfo's
               renderer names gpud's device, glxgears' and glmark2's
               screenshots equal lavapipe's, glmark2 --validate and a short
               benchmark run.

Screenshots of third-party programs are taken with VK_LAYER_GPUD_freeze
(layer_freeze.c), which stops a program after its N-th present; the same
program on lavapipe directly gives the reference. In --direct mode every
program runs on lavapipe directly (the checks of gpud's own behaviour that
lavapipe's WSI does not share are skipped).
"""

import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_test as gt  # noqa: E402
from gpud_test import fail, log, TestSkip  # noqa: E402


# a daemon killed and not back within 300 ms loses its clients' devices
gt.DAEMON_ARGS['wsi-x11'] = ['--restart-grace', '300']


# ---- display servers ---------------------------------------------------------

def tool_env(fx):
    """For the display servers and screenshot tools: no sanitizer runtime
    preloaded (that is for the programs that load the ICD)."""
    env = fx.base_env()
    env.pop('LD_PRELOAD', None)
    return env


class DisplayServer:
    """A display server process of the test's own (self.proc)."""

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Xvfb(DisplayServer):
    """A private X server on a free display number."""

    started = 0

    def __init__(self, fx, size='1024x768'):
        self.fx = fx
        Xvfb.started += 1
        xvfb = shutil.which('Xvfb')
        if not xvfb:
            raise TestSkip('Xvfb is not installed (apt-get install xvfb)')
        # the server takes a free display number and writes it to the pipe
        # (-displayfd): tests running side by side never take the same one
        rfd, wfd = os.pipe()
        # -background none: the root stays black, so a screenshot shows
        # only what the windows drew
        cmd = [xvfb, '-displayfd', str(wfd), '-screen', '0', size + 'x24', '-nolisten', 'tcp',
               '-background', 'none', '-noreset']
        log('$ ' + ' '.join(cmd))
        self.log_path = os.path.join(fx.tmp, 'xvfb%d.log' % Xvfb.started)
        self.proc = subprocess.Popen(cmd, env=tool_env(fx), stdin=subprocess.DEVNULL,
                                     stdout=open(self.log_path, 'wb'),
                                     stderr=subprocess.STDOUT, pass_fds=(wfd,))
        os.close(wfd)
        number = b''
        deadline = time.monotonic() + 15
        with os.fdopen(rfd, 'rb', buffering=0) as r:
            while not number.endswith(b'\n'):
                ready, _, _ = select.select([r], [], [], max(0, deadline - time.monotonic()))
                chunk = r.read(16) if ready else b''
                if not chunk:
                    fail('Xvfb did not start (%s)' % self.log_path)
                number += chunk
        n = int(number)
        self.display = ':%d' % n
        self.sock = '/tmp/.X11-unix/X%d' % n
        log('  Xvfb on %s' % self.display)

    def env(self, env):
        env = dict(env)
        env['DISPLAY'] = self.display
        env.pop('WAYLAND_DISPLAY', None)
        return env



WESTON_INI = """[core]
idle-time=0
[shell]
background-color=0xff000000
panel-position=none
locking=false
animation=none
startup-animation=none
"""


class Weston(DisplayServer):
    """A private Weston, headless backend, with its screenshooter."""

    def __init__(self, fx):
        self.fx = fx
        weston = shutil.which('weston')
        if not weston:
            raise TestSkip('weston is not installed (apt-get install weston)')
        self.dir = os.path.join(fx.tmp, 'wayland')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        ini = os.path.join(self.dir, 'weston.ini')
        with open(ini, 'w') as f:
            f.write(WESTON_INI)
        self.socket = os.path.join(self.dir, 'wayland-gpud-test')
        env = tool_env(fx)
        env['XDG_RUNTIME_DIR'] = self.dir
        cmd = [weston, '--backend=headless-backend.so', '--socket=wayland-gpud-test',
               '--width=1024', '--height=768', '--use-pixman', '--debug',
               '--config=' + ini]
        log('$ ' + ' '.join(cmd))
        self.log_path = os.path.join(fx.tmp, 'weston.log')
        self.proc = subprocess.Popen(cmd, env=env, cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=open(self.log_path, 'wb'),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.stdout.write(open(self.log_path, errors='replace').read())
                fail('weston did not start')
            time.sleep(0.05)
        time.sleep(0.5)

    def env(self, env):
        env = dict(env)
        env['WAYLAND_DISPLAY'] = self.socket
        env.pop('DISPLAY', None)
        return env

    def screenshot(self, label):
        """The whole output as (width, height, rows of RGB bytes)."""
        before = set(os.listdir(self.dir))
        env = self.env(tool_env(self.fx))
        env['XDG_RUNTIME_DIR'] = self.dir
        p = subprocess.run(['weston-screenshooter'], env=env, cwd=self.dir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        new = [n for n in set(os.listdir(self.dir)) - before if n.endswith('.png')]
        if p.returncode != 0 or len(new) != 1:
            fail('weston-screenshooter (%s): exit %d, %d new files: %s' %
                 (label, p.returncode, len(new), p.stdout.decode(errors='replace')))
        path = os.path.join(self.fx.tmp, 'wayland-%s.png' % label)
        os.rename(os.path.join(self.dir, new[0]), path)
        return read_png(path)



# ---- images --------------------------------------------------------------------

def read_xwd(path):
    """An xwd file (24 or 32-bit TrueColor ZPixmap) as (width, height, rows
    of RGB bytes)."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 100:
        fail('%s is not an xwd file' % path)
    h = struct.unpack('>25I', data[:100])
    header_size, fmt, width, height = h[0], h[2], h[4], h[5]
    byte_order, bpp, bpl, ncolors = h[7], h[11], h[12], h[19]
    masks = h[14:17]
    if fmt != 2 or bpp not in (24, 32) or masks != (0xff0000, 0xff00, 0xff):
        fail('%s: unexpected xwd format %d, %d bpp, masks %r' % (path, fmt, bpp, masks))
    n = bpp // 8
    # where red, green and blue are in a pixel's bytes
    r, g, b = (2, 1, 0) if byte_order == 0 else (n - 3, n - 2, n - 1)
    off = header_size + ncolors * 12
    rows = []
    for y in range(height):
        line = data[off + y * bpl: off + y * bpl + width * n]
        rgb = bytearray(width * 3)
        rgb[0::3] = line[r::n]
        rgb[1::3] = line[g::n]
        rgb[2::3] = line[b::n]
        rows.append(bytes(rgb))
    return width, height, rows


def read_png(path):
    """An 8-bit RGB or RGBA PNG (what weston-screenshooter writes) as
    (width, height, rows of RGB bytes)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        fail('%s is not a PNG file' % path)
    pos, idat, width = 8, b'', None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, color, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or color not in (2, 6) or interlace:
                fail('%s: PNG depth %d colour type %d interlace %d' %
                     (path, depth, color, interlace))
            bpp = 3 if color == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, off = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
        off += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        prev = line
        if bpp == 4:
            rgb = bytearray(width * 3)
            rgb[0::3] = line[0::4]
            rgb[1::3] = line[1::4]
            rgb[2::3] = line[2::4]
            rows.append(bytes(rgb))
        else:
            rows.append(bytes(line))
    return width, height, rows


def pattern_rows(width, height, frame, seed):
    """vk_wsi's pattern_pixel() for a whole frame, as rows of RGB bytes."""
    rows = []
    for y in range(height):
        g = (y * 2 + seed * 50) & 255
        row = bytearray(width * 3)
        for x in range(width):
            row[3 * x] = ((x ^ y) + frame) & 255       # R
            row[3 * x + 1] = g                         # G
            row[3 * x + 2] = (x + frame * 3) & 255     # B
        rows.append(bytes(row))
    return rows


def crop(img, x, y, w, h):
    width, height, rows = img
    if x + w > width or y + h > height:
        fail('a %dx%d region at %d,%d is outside the %dx%d screenshot' %
             (w, h, x, y, width, height))
    return [r[3 * x:3 * (x + w)] for r in rows[y:y + h]]


def compare_rows(got, want, what):
    """Fails with the first differing pixel unless the rows are equal."""
    if got == want:
        return
    bad, first = 0, None
    for y, (a, b) in enumerate(zip(got, want)):
        if a != b:
            for x in range(0, min(len(a), len(b)), 3):
                if a[x:x + 3] != b[x:x + 3]:
                    bad += 1
                    if first is None:
                        first = (x // 3, y, tuple(a[x:x + 3]), tuple(b[x:x + 3]))
    if first is None:
        fail('%s: sizes differ (%d rows vs %d)' % (what, len(got), len(want)))
    fail('%s: %d pixels differ; the first at (%d,%d): RGB %r, expected %r' %
         ((what, bad) + first))


def bounding_box(img, background=(0, 0, 0)):
    """The smallest rectangle holding every pixel that is not background."""
    width, height, rows = img
    bg = bytes(background)
    x0, y0, x1, y1 = width, height, -1, -1
    for y, r in enumerate(rows):
        if r == bg * width:
            continue
        y0, y1 = min(y0, y), y
        for x in range(width):
            if r[3 * x:3 * x + 3] != bg:
                x0 = min(x0, x)
                break
        for x in range(width - 1, -1, -1):
            if r[3 * x:3 * x + 3] != bg:
                x1 = max(x1, x)
                break
    if x1 < 0:
        fail('the screenshot is all background: nothing was shown')
    return x0, y0, x1 - x0 + 1, y1 - y0 + 1


def xwd(fx, xvfb, label, window=None):
    path = os.path.join(fx.tmp, 'x11-%s.xwd' % label)
    cmd = ['xwd', '-silent', '-out', path] + (['-id', window] if window else ['-root'])
    p = subprocess.run(cmd, env=xvfb.env(tool_env(fx)), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if p.returncode != 0:
        fail('%s: %s' % (' '.join(cmd), p.stdout.decode(errors='replace')))
    return read_xwd(path)


# ---- running programs --------------------------------------------------------------

def vk_wsi(fx, env, args, label, timeout=120, expect_rc=0):
    _, out, _ = fx.run([fx.prog('vk_wsi')] + args, env, timeout=timeout, label=label,
                       expect_rc=expect_rc)
    return out


def lavapipe_late_present(fx, rc, err):
    """Whether a program run on lavapipe directly ended (status 1) by
    Xlib's BadDrawable for an image Mesa's X11 present thread put up after
    the window was gone: lavapipe's alone (through gpud the ICD presents)."""
    return fx.direct and rc == 1 and 'BadDrawable' in err and 'X_PutImage' in err


def check_gpud_extensions(fx, out):
    """Through gpud every optional WSI extension vk_wsi looks for is there."""
    if fx.direct:
        return
    m = re.search(r'^extensions: (.*)$', out, re.M)
    if not m or '=0' in m.group(1):
        fail('gpud lacks WSI extensions: %s' % (m.group(0) if m else 'no extensions line'))


def start_hold(fx, env, args, label):
    """vk_wsi ... --hold in the background, once it is holding its last frame:
    (process, window id or None)."""
    p = gt.start_client(fx, [fx.prog('vk_wsi'), '--hold'] + args, env, label=label)
    if p.out.wait_for_prefix('HOLDING', 120) is None:
        stop(p)
        gt.log(gt.indent(p.out.text()) + gt.indent(p.err.text(), '  ! '))
        fail('%s: vk_wsi %s did not get to its last frame' % (label, ' '.join(args)))
    line = p.out.wait_for_prefix('window ', 1)
    window = line.split()[1] if line and line.split()[1].startswith('0x') else None
    return p, window


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def frozen(fx, env, argv, label, after, settle_ms=400, timeout=180):
    """Starts argv with VK_LAYER_GPUD_freeze stopping it after its after-th
    present; returns the process once it is frozen."""
    env = dict(env)
    env['VK_ADD_LAYER_PATH'] = fx.args.bindir
    env['VK_INSTANCE_LAYERS'] = 'VK_LAYER_GPUD_freeze'
    env['GPUD_FREEZE_AFTER'] = str(after)
    env['GPUD_FREEZE_SETTLE_MS'] = str(settle_ms)
    p = gt.start_client(fx, argv, env, label=label)
    if p.err.wait_for_prefix('FROZEN', timeout) is None:
        stop(p)
        gt.log(gt.indent(p.out.text()) + gt.indent(p.err.text(), '  ! '))
        fail('%s: %s was not frozen after %d presents' % (label, ' '.join(argv), after))
    return p


def variants(fx):
    """(label, env) of the two ways a program runs: through gpud (lavapipe
    directly in --direct mode), and on lavapipe directly."""
    return [('gpud' if not fx.direct else 'direct', fx.gpud_env(gt.VARIANTS[0])),
            ('lavapipe', fx.direct_env(gt.VARIANTS[0]))]


def screenshot_compare(fx, server, grab, argv, label, after, env_extra=None, settle_ms=400):
    """argv frozen after `after` presents through gpud and on lavapipe, on
    display server `server`: the two screenshots (grab(label) -> image) must
    be equal. Returns gpud's."""
    shots = []
    for how, env in variants(fx):
        env = server.env(env)
        env.update(env_extra or {})
        p = frozen(fx, env, argv, '%s %s' % (label, how), after, settle_ms)
        try:
            # until the window holds still: a driver's own WSI (Mesa 25's
            # present thread) may put the frozen frame up late on a busy
            # machine
            shot = grab('%s-%s' % (label, how))
            for _ in range(10):
                time.sleep(0.3)
                again = grab('%s-%s' % (label, how))
                if again == shot:
                    break
                shot = again
            shots.append(shot)
        finally:
            stop(p)
    a, b = shots
    if (a[0], a[1]) != (b[0], b[1]):
        fail('%s: screenshots of %dx%d and %dx%d' % (label, a[0], a[1], b[0], b[1]))
    box = bounding_box(a)
    compare_rows(a[2], b[2], '%s: frame %d through gpud vs lavapipe directly' % (label, after))
    log('%s: frame %d through gpud equals lavapipe directly (%dx%d screen, content %dx%d at '
        '%d,%d)' % (label, after, a[0], a[1], box[2], box[3], box[0], box[1]))
    return a


# ---- wsi-x11 -------------------------------------------------------------------------------

def check_window(fx, xvfb, window, size, frame, seed, what):
    img = xwd(fx, xvfb, what.replace(' ', '-'), window)
    if (img[0], img[1]) != size:
        fail('%s: the window is %dx%d, expected %dx%d' % ((what,) + img[:2] + size))
    compare_rows(img[2], pattern_rows(size[0], size[1], frame, seed),
                 '%s: frame %d in the window' % (what, frame))
    log('%s: the window shows frame %d exactly (%dx%d)' % ((what, frame) + size))


def wsi_x11(fx, xvfb):
    genv = xvfb.env(fx.gpud_env(gt.VARIANTS[0]))

    # what is shown is exactly what was drawn: both platforms, every path
    paths = [('xcb', {}, 'xcb'), ('xlib', {}, 'xlib'),
             ('xcb', {'NODEVICE_SELECT': '1'}, 'xcb NODEVICE_SELECT=1')]
    if not fx.direct:
        paths += [('xcb', {'GPUD_WSI_NO_PRESENT': '1'}, 'xcb shm-put-image'),
                  ('xcb', {'GPUD_WSI_NO_SHM': '1'}, 'xcb put-image')]
    for platform, extra, what in paths:
        env = dict(genv, **extra)
        for mode in (['fifo', 'immediate', 'mailbox'] if what == 'xcb' else ['fifo']):
            p, window = start_hold(fx, env, ['--platform', platform, '--mode', mode,
                                             '--frames', '12', '--seed', '3', 'frames'],
                                   '%s %s' % (what, mode))
            try:
                check_window(fx, xvfb, window, (160, 120), 11, 3, '%s %s' % (what, mode))
            finally:
                stop(p)

    # pacing of each present mode
    for platform in ('xcb', 'xlib'):
        out = vk_wsi(fx, genv, ['--platform', platform, '--frames', '40', 'modes'] +
                     ([] if fx.direct else ['--check-pacing']), platform + ' modes')
        check_gpud_extensions(fx, out)
        fps = dict(re.findall(r'^mode (\S+) fps ([\d.]+)$', out, re.M))
        if not fx.direct and sorted(fps) != ['FIFO', 'FIFO_RELAXED', 'IMMEDIATE', 'MAILBOX']:
            fail('%s: modes measured: %r' % (platform, fps))
        log('%s frame rates: %s' % (platform, ', '.join('%s %s' % i for i in sorted(fps.items()))))

    # acquire time-outs, present waits
    for platform in ('xcb', 'xlib'):
        out = vk_wsi(fx, genv, ['--platform', platform, 'timeout'], platform + ' timeout')
        if not fx.direct and 'acquire with a 50 ms timeout: VK_TIMEOUT' not in out:
            fail('%s: a 50 ms acquire with no image free did not return VK_TIMEOUT' % platform)
        vk_wsi(fx, genv, ['--platform', platform, 'presentwait'], platform + ' presentwait',
               expect_rc=None if fx.direct else 0)
        # VK_EXT_swapchain_maintenance1: modes switched present by present,
        # present fences
        vk_wsi(fx, genv, ['--platform', platform, 'maintenance'] +
               ([] if fx.direct else ['--check-pacing']), platform + ' maintenance',
               expect_rc=None if fx.direct else 0)

    # resize: OUT_OF_DATE or SUBOPTIMAL, then a new swapchain at the new size
    for platform in ('xcb', 'xlib'):
        p, window = start_hold(fx, genv, ['--platform', platform, '--frames', '6', '--seed', '2',
                                          'resize'], platform + ' resize')
        try:
            out = '\n'.join(p.out.lines)
            m = re.search(r'^resized to (\d+)x(\d+): (\S+) .*$', out, re.M)
            last = re.search(r'^frames \d+ last (\d+) on the new swapchain', out, re.M)
            if not m or not last:
                fail('%s resize: no resize report in:\n%s' % (platform, out))
            log('%s resize: %s' % (platform, m.group(0)))
            check_window(fx, xvfb, window, (int(m.group(1)), int(m.group(2))),
                         int(last.group(1)), 2, platform + ' resized')
        finally:
            stop(p)

    # the window destroyed under the swapchain
    for platform in ('xcb', 'xlib'):
        label = platform + ' destroy'
        rc, out, err = fx.run([fx.prog('vk_wsi'), '--platform', platform, 'destroy'], genv,
                              timeout=120, label=label, expect_rc=None if fx.direct else 0)
        # lavapipe directly: Mesa's X11 present thread may put a last image
        # up after the window is gone, and Xlib's BadDrawable ends the
        # program (as for glmark2 below); let by only there, once the
        # application was told its surface is lost
        if rc != 0 and not (platform == 'xlib' and lavapipe_late_present(fx, rc, err) and
                            'window destroyed: VK_ERROR_SURFACE_LOST_KHR' in out):
            fail('%s: exit status %d' % (label, rc))

    # two windowed clients at once
    clients = []
    try:
        for seed, pos in ((4, '10,10'), (5, '300,200')):
            clients.append(start_hold(fx, genv, ['--seed', str(seed), '--pos', pos,
                                                 '--frames', '30', '--mode', 'immediate',
                                                 'frames'], 'client %d' % seed))
        root = xwd(fx, xvfb, 'two-clients')
        for seed, (x, y) in ((4, (10, 10)), (5, (300, 200))):
            compare_rows(crop(root, x, y, 160, 120), pattern_rows(160, 120, 29, seed),
                         'client %d of two' % seed)
        log('two clients: each window shows its own last frame')
    finally:
        for p, _ in clients:
            stop(p)

    if fx.direct:
        return
    # the daemon killed mid-frame and not back within its restart grace
    # (300 ms here): VK_ERROR_DEVICE_LOST within 2 s of the grace
    p = gt.start_client(fx, [fx.prog('vk_wsi'), '--mode', 'immediate', 'lost'], genv,
                        label='lost')
    if not p.out.wait_for('RUNNING', 60):
        stop(p)
        fail('vk_wsi lost did not start drawing: %s' % p.err.text())
    time.sleep(0.2)
    t_kill = fx.kill_daemon()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        stop(p)
        fail('vk_wsi still running 10 s after the daemon was killed')
    took = time.monotonic() - t_kill
    out = p.out.text()
    sys.stdout.write(gt.indent(out) + gt.indent(p.err.text(), '  ! '))
    lost = re.search(r'^DEVICE_LOST from .*$', out, re.M)
    if p.returncode != 0 or not lost:
        fail('vk_wsi lost: %s, no DEVICE_LOST' % gt.describe_rc(p.returncode))
    log('daemon killed mid-frame: %s; the program ended %.2f s later' % (lost.group(0), took))
    if took > 2.3:
        fail('VK_ERROR_DEVICE_LOST came %.2f s after the daemon was killed (limit 0.3 s of '
             'restart grace and 2 s)' % took)
    fx.start_daemon()


# ---- wsi-wayland -------------------------------------------------------------------------

def test_wsi_wayland(fx):
    # headless surfaces need no display server
    genv = fx.gpud_env(gt.VARIANTS[0])
    if fx.direct:
        log('(lavapipe has no VK_EXT_headless_surface: headless is tested through gpud)')
    else:
        for test in ('frames', 'modes', 'timeout', 'presentwait', 'maintenance'):
            out = vk_wsi(fx, genv, ['--platform', 'headless', test], 'headless ' + test)
            check_gpud_extensions(fx, out)

    with_server(fx, Weston, wsi_wayland)


def wsi_wayland(fx, weston):
    genv = weston.env(fx.gpud_env(gt.VARIANTS[0]))
    # what is shown is exactly what was drawn (Weston places the window: it
    # is found as the only thing on the black background)
    for mode in ('fifo', 'mailbox'):
        p, _ = start_hold(fx, genv, ['--platform', 'wayland', '--mode', mode, '--frames', '12',
                                     '--seed', '6', 'frames'], 'wayland ' + mode)
        try:
            time.sleep(0.3)
            shot = weston.screenshot('vk_wsi-' + mode)
            want = pattern_rows(160, 120, 11, 6)
            x, y, w, h = bounding_box(shot)
            if (w, h) != (160, 120):
                fail('wayland %s: the shown content is %dx%d at %d,%d, expected 160x120' %
                     (mode, w, h, x, y))
            compare_rows(crop(shot, x, y, w, h), want, 'wayland %s: frame 11' % mode)
            log('wayland %s: the window shows frame 11 exactly (at %d,%d)' % (mode, x, y))
        finally:
            stop(p)
    for test in ('modes', 'timeout', 'presentwait', 'maintenance'):
        out = vk_wsi(fx, genv, ['--platform', 'wayland', '--frames', '30', test] +
                     (['--check-pacing'] if test in ('modes', 'maintenance') and not fx.direct
                      else []),
                     'wayland ' + test, expect_rc=None if fx.direct else 0)
        check_gpud_extensions(fx, out)
        if test == 'modes':
            log('wayland frame rates: %s' % ', '.join(
                '%s %s' % m for m in re.findall(r'^mode (\S+) fps ([\d.]+)$', out, re.M)))

    vkcube = shutil.which('vkcube-wayland')
    if not vkcube:
        raise TestSkip('vkcube-wayland is not installed (apt-get install vulkan-tools)')
    fx.run([vkcube, '--c', '100'], genv, timeout=180, label='vkcube-wayland', show_output=False)
    envs = {how: weston.env(env) for how, env in variants(fx)}
    shots = []
    for how in envs:
        p = frozen(fx, envs[how], [vkcube], 'vkcube-wayland ' + how, 20)
        try:
            time.sleep(0.2)
            shots.append(weston.screenshot('vkcube-' + how))
        finally:
            stop(p)
        time.sleep(0.3)   # the window gone, before the next one opens
    boxes = [bounding_box(s) for s in shots]
    if boxes[0][2:] != boxes[1][2:]:
        fail('vkcube-wayland: content %r through gpud, %r on lavapipe' % (boxes[0], boxes[1]))
    compare_rows(crop(shots[0], *boxes[0]), crop(shots[1], *boxes[1]),
                 'vkcube-wayland frame 20 through gpud vs lavapipe directly')
    log('vkcube-wayland: frame 20 through gpud equals lavapipe directly (%dx%d)' % boxes[0][2:])


# ---- wsi-apps -------------------------------------------------------------------------

ZINK = {'MESA_LOADER_DRIVER_OVERRIDE': 'zink', 'LIBGL_ALWAYS_SOFTWARE': '1'}


def need(program, package):
    path = shutil.which(program)
    if not path:
        raise TestSkip('%s is not installed (apt-get install %s)' % (program, package))
    return path


def wsi_apps(fx, xvfb):
    genv = xvfb.env(fx.gpud_env(gt.VARIANTS[0]))
    root = lambda label: xwd(fx, xvfb, label)  # noqa: E731

    # Vulkan: vkcube and vkcubepp run their frames and exit 0; a frame
    # looks the same through gpud as on lavapipe
    for name in ('vkcube', 'vkcubepp'):
        prog = need(name, 'vulkan-tools')
        for label, extra in gt.VARIANTS:
            fx.run([prog, '--c', '100'], dict(genv, **extra), timeout=180,
                   label='%s %s' % (name, label), show_output=False)
        screenshot_compare(fx, xvfb, root, [prog], name, 30)

    # GStreamer's Vulkan video sink (a still test pattern: smpte75's bars
    # alone, not smpte's, whose corner of noise differs from frame to frame,
    # and a busy machine's sink drops late frames)
    gst = need('gst-launch-1.0', 'gstreamer1.0-tools')
    fx.run([gst, '-q', 'videotestsrc', 'num-buffers=60', '!', 'vulkanupload', '!',
            'vulkansink'], genv, timeout=120, label='vulkansink')
    screenshot_compare(fx, xvfb, root, [gst, '-q', 'videotestsrc', 'pattern=smpte75', '!',
                                        'video/x-raw,width=320,height=240', '!',
                                        'vulkanupload', '!', 'vulkansink'],
                       'gstreamer-vulkansink', 10)

    # Direct3D 12 through vkd3d; its gears turn with the clock, but not
    # before the first frame
    gears = need('vkd3d-gears', 'vkd3d-demos')
    screenshot_compare(fx, xvfb, root, [gears], 'vkd3d-gears', 1)

    # OpenGL through Zink
    glxinfo = need('glxinfo', 'mesa-utils')
    _, out, _ = fx.run([glxinfo, '-B'], dict(genv, **ZINK), label='glxinfo (Zink)',
                       show_output=False)
    m = re.search(r'^OpenGL renderer string: (.*)$', out, re.M)
    if not m:
        fail('glxinfo -B printed no renderer string')
    log('Zink renderer: %s' % m.group(1))
    if not fx.direct and 'gpud' not in m.group(1):
        fail('the OpenGL renderer does not name gpud: %s' % m.group(1))
    # glxgears' first frame does not depend on the clock
    glxgears = need('glxgears', 'mesa-utils')
    screenshot_compare(fx, xvfb, root, [glxgears], 'glxgears', 1, env_extra=ZINK)

    glmark2 = need('glmark2', 'glmark2-x11')
    env = dict(genv, **ZINK)

    def run_glmark2(argv, label):
        # On lavapipe directly, Mesa's own X11 present thread may put a last
        # image up after glmark2 destroyed its window: Xlib's BadDrawable
        # then ends it with status 1 once it printed everything. That is
        # lavapipe's alone (through gpud the ICD presents): only there is it
        # let by, and only with the whole output checked below.
        rc, out, err = fx.run(argv, env, timeout=300, label=label, show_output=False,
                              expect_rc=None)
        if rc != 0 and not lavapipe_late_present(fx, rc, err):
            fail('%s: exit status %d' % (label, rc))
        if rc != 0:
            log('%s: lavapipe\'s present after the window was gone (BadDrawable) at exit' %
                label)
        return out

    out = run_glmark2([glmark2, '--validate'], 'glmark2 --validate')
    results = re.findall(r'^\[(\w+)\] .*Validation: (\w+)$', out, re.M)
    bad = [r for r in results if r[1] not in ('Success', 'Unknown')]
    ok = [r for r in results if r[1] == 'Success']
    if bad or len(ok) < 20:
        fail('glmark2 --validate: %d successes, failures: %r' % (len(ok), bad))
    log('glmark2 --validate: %d scenes rendered as expected (%d cannot be checked)' %
        (len(ok), len(results) - len(ok)))
    out = run_glmark2([glmark2, '-s', '400x300', '-b', 'build:duration=2',
                       '-b', 'texture:duration=2', '-b', 'shading:duration=2'], 'glmark2')
    renderer = re.search(r'GL_RENDERER:\s*(.*)$', out, re.M)
    score = re.search(r'glmark2 Score: (\d+)', out)
    if not renderer or not score:
        fail('glmark2 printed no renderer or score:\n%s' % out)
    log('glmark2: renderer %s, score %s' % (renderer.group(1), score.group(1)))
    if not fx.direct and 'gpud' not in renderer.group(1):
        fail('glmark2 renderer does not name gpud: %s' % renderer.group(1))
    # effect2d is a still picture: any frame of it is the same
    screenshot_compare(fx, xvfb, root, [glmark2, '-s', '400x300', '-b', 'effect2d:duration=30'],
                       'glmark2-effect2d', 10, env_extra=ZINK)


def with_server(fx, server_class, body):
    """body(fx, server) with a display server of its own."""
    server = server_class(fx)
    try:
        body(fx, server)
    finally:
        server.close()


WSI_SUBCOMMANDS = {
    'wsi-x11': lambda fx: with_server(fx, Xvfb, wsi_x11),
    'wsi-wayland': test_wsi_wayland,
    'wsi-apps': lambda fx: with_server(fx, Xvfb, wsi_apps),
}

if __name__ == '__main__':
    sys.exit(gt.main(WSI_SUBCOMMANDS))
