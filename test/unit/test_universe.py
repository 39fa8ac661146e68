"""The xDSL plugin: taihu's universe loads next to xDSL's own without name clashes."""

from xdsl.universe import XDSL_UNIVERSE, Universe

from taihu.tools.universe import TAIHU_UNIVERSE, get_all_dialects, get_all_passes, get_all_targets


def test_multiverse_has_no_clashes_and_contains_taihu() -> None:
    # get_multiverse raises ValueError on a duplicate dialect, pass or target name.
    multiverse = Universe.get_multiverse()
    for name in get_all_dialects():
        assert name in multiverse.all_dialects, name
    for name in get_all_passes():
        assert name in multiverse.all_passes, name
    for name in get_all_targets():
        assert name in multiverse.all_targets, name


def test_target_names_do_not_clash_with_xdsl() -> None:
    # get_multiverse only sees the installed plugins; compare with xDSL's own table directly too.
    ours = set(TAIHU_UNIVERSE.all_targets)
    assert ours == set(get_all_targets()) and ours
    assert not ours & set(XDSL_UNIVERSE.all_targets), ours & set(XDSL_UNIVERSE.all_targets)


def test_every_registered_factory_loads() -> None:
    for name, factory in TAIHU_UNIVERSE.all_dialects.items():
        assert factory().name == name
    for name, factory in TAIHU_UNIVERSE.all_passes.items():
        assert factory().name == name
    for name, factory in TAIHU_UNIVERSE.all_targets.items():
        assert factory().name == name
