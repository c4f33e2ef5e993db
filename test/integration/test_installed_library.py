"""libgpushare as a user installs it (issue 12, item 2): `cmake --install`
puts the library, the public headers and gpushare.pc under a prefix;
examples/schedule.c builds against the *installed* library with
`pkg-config --cflags --libs gpushare` (no path into the source tree) and
schedules a pod on an in-memory cluster."""
import os
import shlex
import subprocess
import tempfile
import unittest

from gsutil import BUILD, SOURCE


class InstalledLibrary(unittest.TestCase):
    def test_example_builds_against_the_installed_library_and_schedules(self):
        with tempfile.TemporaryDirectory(prefix="gs-install-") as d:
            prefix = os.path.join(d, "prefix")
            subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                           stdout=subprocess.DEVNULL)
            for f in ("include/gpushare/sched.h", "include/gpushare/version.h", "lib/libgpushare.a",
                      "lib/pkgconfig/gpushare.pc"):
                self.assertTrue(os.path.exists(os.path.join(prefix, f)), f)
            # the example is compiled from a copy outside the source tree
            src = os.path.join(d, "schedule.c")
            with open(os.path.join(SOURCE, "examples", "schedule.c")) as f, open(src, "w") as out:
                out.write(f.read())
            env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
            env.pop("PKG_CONFIG_LIBDIR", None)
            flags = subprocess.run(["pkg-config", "--cflags", "--libs", "gpushare"], env=env,
                                   capture_output=True, text=True, check=True).stdout.split()
            self.assertNotIn(SOURCE, " ".join(flags))
            self.assertEqual(subprocess.run(["pkg-config", "--modversion", "gpushare"], env=env,
                                            capture_output=True, text=True).stdout.strip(), "0.4.0")
            exe = os.path.join(d, "schedule")
            extra = shlex.split(os.environ.get("GS_C_FLAGS", ""))
            cc = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", *extra, src, "-o", exe,
                                 *flags], capture_output=True, text=True)
            self.assertEqual(cc.returncode, 0, cc.stderr)
            run = subprocess.run([exe], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            out = run.stdout.splitlines()
            self.assertEqual(out[0], "libgpushare 0.4.0 (header 0.4.0)")
            self.assertIn("filter gpu-a: refused: fewer than 2 GPUs with 4096 MiB free", out)
            self.assertIn("filter gpu-b: fits", out)
            self.assertIn("Binding default/multi-gpu-8gib -> gpu-b", out)
            self.assertIn('  scheduler.framework.gpushare.allocation: {"0":{"0":4,"1":4}}', out)
            self.assertIn("  ALIYUN_COM_GPU_MEM_IDX: 0,1", out)
            self.assertIn("ledger gpu-b gpu 0: 4096/16384 MiB", out)
            self.assertIn("ledger gpu-b gpu 1: 4096/16384 MiB", out)
            self.assertIn("ledger gpu-b gpu 2: 0/16384 MiB", out)


if __name__ == "__main__":
    unittest.main()
