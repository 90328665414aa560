from locpriv.fingerprint import closure, code_fingerprint


def test_closure_follows_relative_imports():
    mods = closure("locpriv.mechanisms.fedkde")
    assert {"locpriv.kde", "locpriv.mechanisms.base", "locpriv.params"} <= mods
    assert "locpriv.attack" not in mods


def test_stage_modules_do_not_pull_each_other():
    assert "locpriv.attack" not in closure("locpriv.stages.run")
    assert "locpriv.stages.attack" not in closure("locpriv.stages.metrics")


def test_fingerprint_is_stable_and_order_free():
    a = code_fingerprint("locpriv.kde", "locpriv.attack")
    assert a == code_fingerprint("locpriv.attack", "locpriv.kde")
    assert a != code_fingerprint("locpriv.kde")
