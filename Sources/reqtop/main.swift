import ReqtopCLI

ReqtopMain.main()
