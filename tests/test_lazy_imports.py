"""A job pays for the imports it uses: the density branch's stages load no scipy, sklearn or matplotlib."""

import subprocess
import sys

HEAVY = ("scipy", "sklearn", "matplotlib")


def test_randomize_and_aggregate_of_kde_mechanisms_skip_heavy_packages():
    code = ("import sys\n"
            "from locpriv.stages.run import randomize, aggregate\n"
            "from locpriv import mechanisms\n"
            "mechanisms.get('fedkde'); mechanisms.get('laplace_ldp')\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"heavy packages imported: {out.strip()}"


def test_unknown_mechanism_still_lists_every_plugin():
    code = ("from locpriv import mechanisms\n"
            "try:\n    mechanisms.get('nope')\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "unknown mechanism 'nope'" in out and "'sldp'" in out and "'fedkde'" in out
