from locpriv.fingerprint import closure, code_fingerprint


def test_closure_follows_relative_imports():
    mods = closure("locpriv.mechanisms.fedkde")
    assert {"locpriv.kde", "locpriv.mechanisms.base", "locpriv.params"} <= mods
    assert "locpriv.adversary.local_maxima" not in mods


def test_stage_modules_do_not_pull_each_other():
    assert "locpriv.adversary.local_maxima" not in closure("locpriv.stages.run")
    assert "locpriv.stages.attack" not in closure("locpriv.stages.metrics")


def test_fingerprint_is_stable_and_order_free():
    a = code_fingerprint("locpriv.kde", "locpriv.adversary.local_maxima")
    assert a == code_fingerprint("locpriv.adversary.local_maxima", "locpriv.kde")
    assert a != code_fingerprint("locpriv.kde")
