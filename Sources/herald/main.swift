import HeraldCLI

await HeraldCommand.runFromCommandLine()
