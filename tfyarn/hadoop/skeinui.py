"""skein's Overview page with the job's pages one click away: YARN's tracking URL lands there.

skein's Java AppMaster renders its Overview from a Mustache template that it loads from the
classpath, and hides the service pages (the job page, TensorBoard) in a drop-down menu. The
AppMaster gets skein's own template, read from this skein's jar, with one button per service
page added under the title bar. It sits in a directory on the JVM's boot class path
(``-Xbootclasspath/a``), where resources are looked up before skein.jar. If the template is
not the one expected, it is shipped unchanged: skein's own page shows.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import skein

SKEIN_JAR = Path(skein.__file__).parent / "java" / "skein.jar"
TEMPLATE = "overview.mustache.html"
UI_DIR = "skein-ui"  # the directory's name in the AppMaster's container
JVM_OPTION = f"-Xbootclasspath/a:{UI_DIR}"
ANCHOR = '<div class="container-fluid">'
BUTTONS = """
      {{#pages}}<a class="btn btn-primary mt-3 mr-2"
         href=".{{proxyPrefix}}/{{getValue}}">{{getKey}} &rarr;</a>{{/pages}}
"""


def write_overview(dest: Path) -> Path:
    """Writes the Overview template into the directory ``dest``, which is returned."""
    with zipfile.ZipFile(SKEIN_JAR) as jar:
        text = jar.read(TEMPLATE).decode()
    if text.count(ANCHOR) == 1:
        text = text.replace(ANCHOR, ANCHOR + BUTTONS)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / TEMPLATE).write_text(text)
    # Shipped as a pack cached on HDFS by its content (tfyarn/submission/codepack.py): the
    # same template must be the same bytes, its time the jar's.
    made = SKEIN_JAR.stat()
    os.utime(dest / TEMPLATE, ns=(made.st_atime_ns, made.st_mtime_ns))
    return dest


LOG_CONFIG = "log4j.properties"  # skein's own, in its jar
# skein's web UI logs each page's target at INFO, and the target's path is the page's secret
# (appmaster/page/webpage.py, appmaster/common/pageguard.py): its warnings only.
QUIET_WEB_UI = "log4j.logger.com.anaconda.skein.WebUI=WARN\n"


def write_log_config(path: Path) -> Path:
    """skein's AppMaster's log4j configuration (skein.Master's log_config): skein's own, read
    from its jar, with its web UI's INFO lines left out. Returns ``path``."""
    with zipfile.ZipFile(SKEIN_JAR) as jar:
        text = jar.read(LOG_CONFIG).decode()
    path.write_text(text.rstrip("\n") + "\n# tfyarn: no page's secret path in the log\n"
                    + QUIET_WEB_UI)  # a later key wins: it overrides skein's own line
    return path
