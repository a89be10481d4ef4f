/// The release this build is, as `herald --version` prints it (with the ledger schema it migrates to).
public enum HeraldVersion {
    public static let current = "0.3.0"
}
