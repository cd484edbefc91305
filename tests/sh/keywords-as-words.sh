# reserved words are ordinary words after a command name
echo if then else fi do done case esac while for in
x=done; echo $x
echo {  }
