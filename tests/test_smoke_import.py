import fastmwem.accounting as acc


def test_import():
    assert acc.Accountant(epsilon=1).remaining() == acc.PureDP(1)
