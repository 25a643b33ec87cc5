"""`accelbench history`: every saved run of a machine as one series per cell and number, the
changes of level found in each (judge.changepoints), and a trend plot per series."""
